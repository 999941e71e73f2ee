//! One profile file's settings after validation, before `extends` is applied, and the
//! merge of a chain of them (tables key by key, lists replaced).

use std::collections::BTreeMap;

use super::diagnostic::Diagnostic;
use super::image::ImageReference;
use super::model::{CudaVersion, GpuRequest, Ipc, Mount, PortBinding, TorchVersion, Ulimit};
use super::size::ByteSize;

/// The `extends` value of a file and where it was written (for errors about it).
#[derive(Debug, Clone)]
pub struct ExtendsReference {
    pub target: String,
    pub place: Diagnostic,
}

/// What one file sets. Every field is optional: a file may set only what it overrides.
#[derive(Debug, Clone, Default)]
pub struct Layer {
    pub name: Option<String>,
    pub description: Option<String>,
    pub extends: Option<ExtendsReference>,
    pub image: Option<ImageReference>,
    pub command: Option<Vec<String>>,
    pub workdir: Option<String>,
    pub user: Option<String>,
    pub gpus: Option<GpuRequest>,
    pub memory: Option<ByteSize>,
    pub cpus: Option<f64>,
    pub shm_size: Option<ByteSize>,
    pub ipc: Option<Ipc>,
    pub ports: Option<Vec<PortBinding>>,
    pub mounts: Option<Vec<Mount>>,
    pub env: BTreeMap<String, String>,
    pub ulimits: BTreeMap<String, Ulimit>,
    pub cuda: Option<CudaVersion>,
    pub torch: Option<TorchVersion>,
    pub cudnn: Option<u32>,
    pub commands: BTreeMap<String, Vec<String>>,
}

/// A merged chain: the settings and, per key (`memory`, `env.PATH`), the file that set it.
#[derive(Debug, Clone, Default)]
pub struct MergedLayer {
    pub layer: Layer,
    pub origins: BTreeMap<String, String>,
}

impl MergedLayer {
    /// Lays `child` (from `path`) over what is merged so far. `name` and `extends` are
    /// never inherited: they belong to the file that writes them.
    pub fn overlay(&mut self, child: Layer, path: &str) {
        let base = &mut self.layer;
        let origins = &mut self.origins;
        let mut record = |key: &str| {
            origins.insert(key.to_string(), path.to_string());
        };
        macro_rules! replace {
            ($($field:ident),*) => {$(
                if child.$field.is_some() {
                    base.$field = child.$field;
                    record(stringify!($field));
                }
            )*};
        }
        replace!(
            description,
            image,
            command,
            workdir,
            user,
            gpus,
            memory,
            cpus,
            shm_size,
            ipc,
            ports,
            mounts
        );
        base.name = child.name;
        base.extends = child.extends;
        macro_rules! stack {
            ($($field:ident),*) => {$(
                if child.$field.is_some() {
                    base.$field = child.$field;
                    record(concat!("stack.", stringify!($field)));
                }
            )*};
        }
        stack!(cuda, torch, cudnn);
        for (key, value) in child.env {
            record(&format!("env.{key}"));
            base.env.insert(key, value);
        }
        for (key, value) in child.ulimits {
            record(&format!("ulimits.{key}"));
            base.ulimits.insert(key, value);
        }
        for (key, value) in child.commands {
            record(&format!("commands.{key}"));
            base.commands.insert(key, value);
        }
    }
}
