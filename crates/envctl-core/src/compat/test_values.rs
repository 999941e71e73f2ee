//! Values the compat unit tests write as text (`"12.8"`, `"570.124.06"`, `"2.8.0+cu128"`),
//! parsed, and the bundled matrix they are judged against.

use super::matrix::Matrix;
use super::version::{ComputeCapability, DriverVersion};
use crate::profile::model::{CudaVersion, TorchVersion};

pub fn matrix() -> &'static Matrix {
    Matrix::bundled()
}

pub fn capability(text: &str) -> ComputeCapability {
    text.parse().unwrap()
}

pub fn cuda(text: &str) -> CudaVersion {
    text.parse().unwrap()
}

pub fn driver(text: &str) -> DriverVersion {
    text.parse().unwrap()
}

pub fn torch(text: &str) -> TorchVersion {
    text.parse().unwrap()
}
