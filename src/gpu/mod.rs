//! NVML through nvml-wrapper: the only module that touches the GPU driver (filled in by the doctor work).
