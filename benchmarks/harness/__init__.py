"""What the benchmarks and the tests both drive: moto's S3 server on loopback, a proxy that fails S3
requests on purpose, a killer of worker processes, and a real multi-node Ray cluster on this machine.
Needs the dev extra (moto, psutil)."""
