//! Profile → Docker Engine API container-create body (filled in by the `up` work).
