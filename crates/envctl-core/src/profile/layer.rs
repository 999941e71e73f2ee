//! One profile file's settings after validation, before `extends` is applied, and the
//! merge of a chain of them (tables key by key, lists replaced).

use std::collections::BTreeMap;

use super::diagnostic::Diagnostic;
use super::host_access::{Device, Network};
use super::image::ImageReference;
use super::model::{GpuPlacement, GpuRequest, Ipc, Mount, PortBinding, Stack, Ulimit};
use super::size::ByteSize;

/// The `extends` value of a file and where it was written (for errors about it).
#[derive(Debug, Clone)]
pub struct ExtendsReference {
    pub target: String,
    pub place: Diagnostic,
}

/// Declares the top-level keys of a profile file once: each line is a [`Layer`] field, the
/// TOML key of the same spelling (in [`LayerKey::NAMES`], the order diagnostics list them
/// in) and its [`LayerKey`] variant, which the validator matches on exhaustively.
macro_rules! layer_schema {
    ($($(#[$attribute:meta])* $field:ident: $type:ty => $variant:ident,)*) => {
        /// What one file sets. Every field is optional: a file may set only what it overrides.
        #[derive(Debug, Clone, Default)]
        pub struct Layer {
            $($(#[$attribute])* pub $field: $type,)*
        }

        /// A top-level key of a profile file.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum LayerKey {
            $($variant,)*
        }

        impl LayerKey {
            /// Every top-level key, as written in TOML.
            pub const NAMES: [&'static str; [$(stringify!($field),)*].len()] =
                [$(stringify!($field),)*];

            /// The key a TOML name spells, if it is one.
            pub fn from_name(name: &str) -> Option<Self> {
                match name {
                    $(stringify!($field) => Some(LayerKey::$variant),)*
                    _ => None,
                }
            }
        }
    };
}

layer_schema! {
    name: Option<String> => Name,
    description: Option<String> => Description,
    extends: Option<ExtendsReference> => Extends,
    image: Option<ImageReference> => Image,
    command: Option<Vec<String>> => Command,
    workdir: Option<String> => Workdir,
    user: Option<String> => User,
    gpus: Option<GpuRequest> => Gpus,
    placement: Option<GpuPlacement> => Placement,
    memory: Option<ByteSize> => Memory,
    cpus: Option<f64> => Cpus,
    shm_size: Option<ByteSize> => ShmSize,
    ipc: Option<Ipc> => Ipc,
    ports: Option<Vec<PortBinding>> => Ports,
    mounts: Option<Vec<Mount>> => Mounts,
    env: BTreeMap<String, String> => Env,
    /// Labels for the container (and every export), as compose's `labels`.
    labels: BTreeMap<String, String> => Labels,
    ulimits: BTreeMap<String, Ulimit> => Ulimits,
    /// `host`, `none`, `bridge` or a network's name (`docker run --network`).
    network: Option<Network> => Network,
    /// Host device nodes for the container (`docker run --device`), as `/dev/infiniband`.
    devices: Option<Vec<Device>> => Devices,
    /// Linux capabilities added to Docker's default set, canonical (`IPC_LOCK`).
    cap_add: Option<Vec<String>> => CapAdd,
    hostname: Option<String> => Hostname,
    /// The `[stack]` table; each of its keys is merged on its own.
    stack: Stack => Stack,
    commands: BTreeMap<String, Vec<String>> => Commands,
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
        // Destructured without `..`: a new field does not compile until it is merged here.
        let Layer {
            name,
            description,
            extends,
            image,
            command,
            workdir,
            user,
            gpus,
            placement,
            memory,
            cpus,
            shm_size,
            ipc,
            ports,
            mounts,
            env,
            labels,
            ulimits,
            network,
            devices,
            cap_add,
            hostname,
            stack: Stack { cuda, torch, cudnn },
            commands,
        } = child;
        let base = &mut self.layer;
        let origins = &mut self.origins;
        let mut record = |key: &str| {
            origins.insert(key.to_string(), path.to_string());
        };
        macro_rules! replace {
            ($($place:expr => $field:ident),*) => {$(
                if $field.is_some() {
                    $place = $field;
                    record(stringify!($field));
                }
            )*};
        }
        replace!(
            base.description => description,
            base.image => image,
            base.command => command,
            base.workdir => workdir,
            base.user => user,
            base.gpus => gpus,
            base.placement => placement,
            base.memory => memory,
            base.cpus => cpus,
            base.shm_size => shm_size,
            base.ipc => ipc,
            base.ports => ports,
            base.mounts => mounts,
            base.network => network,
            base.devices => devices,
            base.cap_add => cap_add,
            base.hostname => hostname
        );
        base.name = name;
        base.extends = extends;
        macro_rules! stack {
            ($($field:ident),*) => {$(
                if $field.is_some() {
                    base.stack.$field = $field;
                    record(concat!("stack.", stringify!($field)));
                }
            )*};
        }
        stack!(cuda, torch, cudnn);
        for (key, value) in env {
            record(&format!("env.{key}"));
            base.env.insert(key, value);
        }
        for (key, value) in labels {
            record(&format!("labels.{key}"));
            base.labels.insert(key, value);
        }
        for (key, value) in ulimits {
            record(&format!("ulimits.{key}"));
            base.ulimits.insert(key, value);
        }
        for (key, value) in commands {
            record(&format!("commands.{key}"));
            base.commands.insert(key, value);
        }
    }
}
