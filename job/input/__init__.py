"""What is read: the input listing, the dataset checks over footers and ids, and the plan of files a run reads."""
