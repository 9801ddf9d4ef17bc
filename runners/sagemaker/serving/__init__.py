"""What runs inside the SageMaker PyTorch container: the handler and its content types.

``handler.py`` is copied into model.tar.gz as ``code/handler.py``; it is not named
``inference.py`` because that module name would shadow our ``inference`` package there.
"""
