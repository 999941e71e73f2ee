//! A stand-in `libnvidia-ml.so` for tests (filled in by the doctor work).
