"""The built-in sample and synthetic datasets: what a first run, the tests and the benchmarks read."""
