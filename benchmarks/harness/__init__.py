"""What the fault benchmark and the tests both drive: moto's S3 server on loopback, a proxy that fails S3
requests on purpose, and a killer of worker processes. Needs the dev extra (moto, psutil)."""
