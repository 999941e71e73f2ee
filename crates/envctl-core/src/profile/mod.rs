//! Profiles: the TOML format, its validation with file:line:column diagnostics,
//! discovery, `extends` resolution and the content hash.

pub mod bundled;
pub mod confine;
pub mod diagnostic;
pub mod error;
pub mod file;
pub mod host_access;
pub mod image;
pub mod layer;
pub mod model;
pub mod mounts;
pub mod ports;
pub mod resolve;
pub mod size;
pub mod team;
pub mod template;
pub mod validate;

pub use diagnostic::Diagnostic;
pub use error::ProfileError;
pub use model::Profile;
pub use resolve::{ListedProfile, ProfileFile, ResolvedProfile, SearchPath, SourceKind, TEAM_FILE};
