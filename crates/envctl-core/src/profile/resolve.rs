//! Finding profiles (a path, `./envctl/`, `ENVCTL_PROFILE_PATH`, the user folder, then the
//! bundled ones) and resolving a profile's `extends` chain into one [`Profile`].

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;
use sha2::{Digest, Sha256};

use super::bundled;
use super::confine::Confinement;
use super::diagnostic::{Diagnostic, file_diagnostic};
use super::error::ProfileError;
use super::file::{read_profile_text, read_profile_text_verified};
use super::image::ImageReference;
use super::layer::{ExtendsReference, Layer, MergedLayer};
use super::model::{GpuRequest, Ipc, Profile, Ulimit};
use super::validate::{check_profile_name, did_you_mean, validate};

/// How long an `extends` chain may be before envctl calls it a mistake.
const MAXIMUM_EXTENDS_DEPTH: usize = 32;

/// Where a profile comes from, in the order envctl looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SourceKind {
    /// Given as a path on the command line, or found in `ENVCTL_PROFILE_PATH`.
    Path,
    /// `./envctl/` in the working directory.
    Project,
    /// `$XDG_CONFIG_HOME/envctl/profiles/`.
    User,
    /// Shipped inside envctl.
    Bundled,
}

impl fmt::Display for SourceKind {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(match self {
            SourceKind::Path => "path",
            SourceKind::Project => "project",
            SourceKind::User => "user",
            SourceKind::Bundled => "bundled",
        })
    }
}

/// One place profiles are looked for.
#[derive(Debug, Clone)]
pub struct Location {
    pub kind: SourceKind,
    /// `None` for the bundled profiles.
    pub directory: Option<PathBuf>,
}

/// The team file (`profile::team`: the `[hosts]` of `--hosts`) in a profile folder: never a
/// profile, so `hosts` names none.
pub const TEAM_FILE: &str = "hosts.toml";

/// The ordered places to look for profiles by name.
#[derive(Debug, Clone)]
pub struct SearchPath {
    pub locations: Vec<Location>,
}

impl SearchPath {
    /// The discovery order (ARCHITECTURE.md, "Resolution orders"): `./envctl/`, then each `ENVCTL_PROFILE_PATH`
    /// folder, then the user folder, then the bundled profiles.
    pub fn new(project: PathBuf, extra: Vec<PathBuf>, user: Option<PathBuf>) -> Self {
        let mut locations = vec![Location {
            kind: SourceKind::Project,
            directory: Some(project),
        }];
        locations.extend(extra.into_iter().map(|directory| Location {
            kind: SourceKind::Path,
            directory: Some(directory),
        }));
        locations.extend(user.map(|directory| Location {
            kind: SourceKind::User,
            directory: Some(directory),
        }));
        locations.push(Location {
            kind: SourceKind::Bundled,
            directory: None,
        });
        SearchPath { locations }
    }
}

/// A profile file envctl found (on disk or bundled), not yet read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProfileFile {
    Disk { path: PathBuf, kind: SourceKind },
    Bundled { name: String },
}

impl ProfileFile {
    /// The file as shown to the user: the path as found, or `<bundled>/NAME.toml`.
    pub fn shown(&self) -> String {
        match self {
            ProfileFile::Disk { path, .. } => path.display().to_string(),
            ProfileFile::Bundled { name } => format!("<bundled>/{name}.toml"),
        }
    }

    pub fn kind(&self) -> SourceKind {
        match self {
            ProfileFile::Disk { kind, .. } => *kind,
            ProfileFile::Bundled { .. } => SourceKind::Bundled,
        }
    }

    /// The name a profile gets when it does not write `name`: its file stem.
    fn stem(&self) -> String {
        match self {
            ProfileFile::Disk { path, .. } => path
                .file_stem()
                .map(|stem| stem.to_string_lossy().into_owned())
                .unwrap_or_default(),
            ProfileFile::Bundled { name } => name.clone(),
        }
    }

    /// Two finds of one file compare equal here, however the path was spelled.
    fn identity(&self) -> String {
        match self {
            ProfileFile::Disk { path, .. } => std::fs::canonicalize(path)
                .unwrap_or_else(|_| path.clone())
                .display()
                .to_string(),
            ProfileFile::Bundled { name } => format!("<bundled>/{name}"),
        }
    }

    /// The file's text; with a confinement, only when the file (its real path, and the one
    /// of the descriptor opened) lies inside it.
    fn read(&self, confinement: Option<&Confinement>) -> Result<String, Diagnostic> {
        match self {
            ProfileFile::Disk { path, .. } => {
                let shown = self.shown();
                let Some(confinement) = confinement else {
                    return read_profile_text(path, &shown);
                };
                let escape = |real: PathBuf| {
                    file_diagnostic(
                        &shown,
                        format!(
                            "`{shown}` leads to `{}`, outside the profile folders and the project; envctl does not read it",
                            real.display()
                        ),
                        Some(confinement_hint(confinement)),
                    )
                };
                let checked = confinement
                    .admit(path)
                    .map_err(escape)?
                    .unwrap_or_else(|| path.clone());
                read_profile_text_verified(path, &shown, |file| {
                    confinement.admit_opened(file, &checked).map_err(escape)
                })
            }
            ProfileFile::Bundled { name } => {
                bundled::find(name).map(str::to_string).ok_or_else(|| {
                    file_diagnostic(&self.shown(), "no such bundled profile".into(), None)
                })
            }
        }
    }
}

/// A profile ready to use, with where each of its settings came from.
#[derive(Debug, Clone, Serialize)]
pub struct ResolvedProfile {
    pub profile: Profile,
    pub source: SourceKind,
    /// The file named or found; the first of `chain`.
    pub file: String,
    /// The files of the `extends` chain, from the profile itself to its root.
    pub chain: Vec<String>,
    /// Per key (`memory`, `env.PATH`, `stack.cuda`), the file that set it.
    pub origins: BTreeMap<String, String>,
    /// Hash of the settings that shape the container (the `envctl.config-hash` label).
    pub config_hash: String,
}

/// A profile as `profiles list` shows it; `problems` counts what is wrong with it.
#[derive(Debug, Clone, Serialize)]
pub struct ListedProfile {
    pub name: String,
    pub source: SourceKind,
    pub file: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub problems: usize,
}

/// Whether a command-line argument names a file rather than a profile.
pub fn is_path_argument(argument: &str) -> bool {
    argument.contains('/') || argument.ends_with(".toml")
}

impl SearchPath {
    /// Finds the profile an argument names: a file path, or a name looked up in order.
    pub fn find(&self, argument: &str) -> Result<ProfileFile, ProfileError> {
        if is_path_argument(argument) {
            let path = PathBuf::from(argument);
            if !path.exists() {
                return Err(ProfileError::FileNotFound { path });
            }
            return Ok(ProfileFile::Disk {
                path,
                kind: SourceKind::Path,
            });
        }
        let mut looked = Vec::new();
        for location in &self.locations {
            if let Some(found) = self.find_in(location, argument, &mut looked) {
                return Ok(found);
            }
        }
        let names = self.names();
        let known: Vec<&str> = names.iter().map(String::as_str).collect();
        Err(ProfileError::NotFound {
            name: argument.to_string(),
            looked,
            suggestion: did_you_mean(argument, &known)
                .filter(|suggestion| *suggestion != argument)
                .map(str::to_string),
        })
    }

    fn find_in(
        &self,
        location: &Location,
        name: &str,
        looked: &mut Vec<String>,
    ) -> Option<ProfileFile> {
        match &location.directory {
            Some(directory) => {
                let path = directory.join(format!("{name}.toml"));
                if path.file_name().is_some_and(|file| file == TEAM_FILE) {
                    return None;
                }
                looked.push(path.display().to_string());
                // Whatever is there is the profile of that name: a FIFO or a folder is
                // then refused as what it is, not passed over as "not found".
                is_present(&path).then_some(ProfileFile::Disk {
                    path,
                    kind: location.kind,
                })
            }
            None => {
                looked.push("the bundled profiles".into());
                bundled::find(name).map(|_| ProfileFile::Bundled {
                    name: name.to_string(),
                })
            }
        }
    }

    /// Every profile name envctl can find, without duplicates.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.files().0.iter().map(ProfileFile::stem).collect();
        names.sort_by(|a, b| natural_order(a, b));
        names.dedup();
        names
    }

    /// Every profile file in discovery order (the first of each name wins), and the
    /// folders that could not be read.
    pub fn files(&self) -> (Vec<ProfileFile>, Vec<String>) {
        let mut files: Vec<ProfileFile> = Vec::new();
        let mut warnings = Vec::new();
        for location in &self.locations {
            let mut found = match &location.directory {
                Some(directory) => match list_directory(directory) {
                    Ok(paths) => paths
                        .into_iter()
                        .map(|path| ProfileFile::Disk {
                            path,
                            kind: location.kind,
                        })
                        .collect(),
                    Err(warning) => {
                        warnings.extend(warning);
                        Vec::new()
                    }
                },
                None => bundled::BUNDLED
                    .iter()
                    .map(|(name, _)| ProfileFile::Bundled {
                        name: name.to_string(),
                    })
                    .collect(),
            };
            found.retain(|file| !files.iter().any(|seen| seen.stem() == file.stem()));
            found.sort_by(|a, b| natural_order(&a.stem(), &b.stem()));
            files.extend(found);
        }
        (files, warnings)
    }

    /// Every profile, resolved as far as it goes, and the folders that could not be read.
    pub fn list(&self) -> (Vec<ListedProfile>, Vec<String>) {
        let (files, warnings) = self.files();
        let listed = files
            .into_iter()
            .map(|file| match self.resolve_file(file.clone()) {
                Ok(resolved) => ListedProfile {
                    name: resolved.profile.name,
                    source: resolved.source,
                    file: resolved.file,
                    image: Some(resolved.profile.image.to_string()),
                    description: resolved.profile.description,
                    problems: 0,
                },
                Err(error) => ListedProfile {
                    name: file.stem(),
                    source: file.kind(),
                    file: file.shown(),
                    image: None,
                    description: None,
                    problems: error.diagnostics().len().max(1),
                },
            })
            .collect();
        (listed, warnings)
    }

    /// Finds and resolves the profile an argument names.
    pub fn resolve(&self, argument: &str) -> Result<ResolvedProfile, ProfileError> {
        let file = self.find(argument)?;
        self.resolve_file(file)
    }

    /// Reads, validates and merges a profile file with its `extends` chain. Every problem
    /// in every file of the chain is reported together.
    ///
    /// Every file is read only when it really lies (links resolved) inside the search
    /// folders or the project of the file named ([`Confinement`]): a profile of a cloned
    /// repository, or a link in `./envctl/`, cannot bring in a file of the host.
    pub fn resolve_file(&self, file: ProfileFile) -> Result<ResolvedProfile, ProfileError> {
        let confinement = self.confinement_of(&file);
        let mut chain: Vec<(ProfileFile, Layer)> = Vec::new();
        let mut diagnostics = Vec::new();
        let mut current = Some(file);
        while let Some(file) = current.take() {
            let text = match file.read(confinement.as_ref()) {
                Ok(text) => text,
                Err(diagnostic) => {
                    diagnostics.push(diagnostic);
                    break;
                }
            };
            let (layer, problems) = validate(&file.shown(), &text);
            diagnostics.extend(problems);
            let extends = layer.extends.clone();
            chain.push((file, layer));
            let Some(extends) = extends else { break };
            if chain.len() >= MAXIMUM_EXTENDS_DEPTH {
                diagnostics.push(extends.place.with_message(
                    format!("`extends` chain is longer than {MAXIMUM_EXTENDS_DEPTH} profiles"),
                    Some("flatten the chain".into()),
                ));
                break;
            }
            match self.parent(&extends, &chain, confinement.as_ref()) {
                Ok(parent) => current = Some(parent),
                Err(diagnostic) => {
                    diagnostics.push(diagnostic);
                    break;
                }
            }
        }
        if !diagnostics.is_empty() {
            return Err(ProfileError::Invalid { diagnostics });
        }
        merge_chain(chain)
    }

    /// The folders a chain starting at `file` may read from: the search folders and the
    /// project of a file on disk; none for a bundled profile, which extends bundled
    /// profiles only.
    fn confinement_of(&self, file: &ProfileFile) -> Option<Confinement> {
        match file {
            ProfileFile::Disk { path, .. } => Some(Confinement::new(
                self.locations
                    .iter()
                    .filter_map(|location| location.directory.as_deref()),
                Some(path),
            )),
            ProfileFile::Bundled { .. } => None,
        }
    }

    /// The file that `extends` of the last file of `chain` names, or why the chain stops
    /// there: a cycle, a file outside the `confinement`, or no such profile.
    fn parent(
        &self,
        extends: &ExtendsReference,
        chain: &[(ProfileFile, Layer)],
        confinement: Option<&Confinement>,
    ) -> Result<ProfileFile, Diagnostic> {
        let child = &chain[chain.len() - 1].0;
        let parent = self
            .find_parent(&extends.target, child)
            .map_err(|missing| self.missing_parent(extends, missing))?;
        let parent_identity = parent.identity();
        if let Some(start) = chain
            .iter()
            .position(|(file, _)| file.identity() == parent_identity)
        {
            let mut cycle: Vec<String> = chain[start..]
                .iter()
                .map(|(file, _)| file.shown())
                .collect();
            cycle.push(parent.shown());
            return Err(extends.place.with_message(
                format!("`extends` forms a cycle: {}", cycle.join(" → ")),
                Some("remove `extends` from one of these profiles".into()),
            ));
        }
        if let (ProfileFile::Disk { path, .. }, Some(confinement)) = (&parent, confinement)
            && let Err(real) = confinement.admit(path)
        {
            return Err(extends.place.with_message(
                format!(
                    "`extends` = \"{}\" leads to `{}`, outside the profile folders and the project; envctl does not read it",
                    extends.target,
                    real.display()
                ),
                Some(confinement_hint(confinement)),
            ));
        }
        Ok(parent)
    }

    /// What `extends` says when no profile of its name was found: it names its own file,
    /// only itself, or nothing envctl knows (with the nearest name, as `up NAME` answers
    /// a typo).
    fn missing_parent(&self, extends: &ExtendsReference, missing: ParentMissing) -> Diagnostic {
        match missing {
            ParentMissing {
                only_itself: true, ..
            } if is_path_argument(&extends.target) => extends.place.with_message(
                format!(
                    "`extends` points at this file itself (`{}`)",
                    extends.target
                ),
                Some("extend another profile, or remove `extends`".into()),
            ),
            ParentMissing {
                looked,
                only_itself: true,
            } => extends.place.with_message(
                format!("`extends` names this profile itself (`{}`), and no other profile of that name exists", extends.target),
                Some(format!("extend another profile; looked in: {}", looked.join(", "))),
            ),
            ParentMissing { looked, .. } => {
                let names = self.names();
                let known: Vec<&str> = names.iter().map(String::as_str).collect();
                let looked = format!("looked in: {}", looked.join(", "));
                let hint = match did_you_mean(&extends.target, &known)
                    .filter(|suggestion| *suggestion != extends.target)
                {
                    Some(suggestion) => format!("did you mean `{suggestion}`? ({looked})"),
                    None => looked,
                };
                extends.place.with_message(
                    format!("`extends`: profile `{}` not found", extends.target),
                    Some(hint),
                )
            }
        }
    }

    /// Finds what `extends = "target"` names for `child`: first in the child's folder, then
    /// in the usual order. A profile may extend a profile of its own name elsewhere
    /// (`envctl/pytorch-2.8.toml` extending the bundled `pytorch-2.8`). Bundled profiles
    /// extend bundled profiles only, so they mean the same on every machine.
    fn find_parent(&self, target: &str, child: &ProfileFile) -> Result<ProfileFile, ParentMissing> {
        let child_identity = child.identity();
        let mut looked = Vec::new();
        let mut only_itself = false;
        let mut accept = |found: ProfileFile| {
            if found.identity() == child_identity {
                only_itself = true;
                None
            } else {
                Some(found)
            }
        };
        match child {
            ProfileFile::Bundled { .. } => {
                let bundled = Location {
                    kind: SourceKind::Bundled,
                    directory: None,
                };
                if let Some(found) = self
                    .find_in(&bundled, target, &mut looked)
                    .and_then(&mut accept)
                {
                    return Ok(found);
                }
            }
            ProfileFile::Disk { path, kind } => {
                let directory = path.parent().unwrap_or(Path::new("."));
                if is_path_argument(target) {
                    let path = directory.join(target);
                    looked.push(path.display().to_string());
                    if is_present(&path)
                        && let Some(found) = accept(ProfileFile::Disk { path, kind: *kind })
                    {
                        return Ok(found);
                    }
                } else {
                    let own_folder = Location {
                        kind: *kind,
                        directory: Some(directory.to_path_buf()),
                    };
                    for location in std::iter::once(&own_folder).chain(&self.locations) {
                        if let Some(found) = self
                            .find_in(location, target, &mut looked)
                            .and_then(&mut accept)
                        {
                            return Ok(found);
                        }
                    }
                }
            }
        }
        looked.dedup();
        Err(ParentMissing {
            looked,
            only_itself,
        })
    }
}

/// Whether anything is at `path` (a dangling link counts: the reader says what it is).
fn is_present(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}

fn confinement_hint(confinement: &Confinement) -> String {
    format!(
        "envctl reads profiles only inside {}; to use one elsewhere, add its folder to ENVCTL_PROFILE_PATH",
        confinement.describe()
    )
}

/// Why `extends` found nothing: where envctl looked, and whether the only match was the
/// extending file itself.
struct ParentMissing {
    looked: Vec<String>,
    only_itself: bool,
}

/// Validates one profile's text on its own (no `extends` lookup: a written `extends` is an
/// error here). For tests and fuzzing, where no search path exists.
pub fn resolve_text(shown: &str, text: &str) -> Result<ResolvedProfile, ProfileError> {
    let (layer, mut diagnostics) = validate(shown, text);
    if let Some(extends) = &layer.extends {
        diagnostics.push(
            extends
                .place
                .with_message("`extends` needs a profile search path here".into(), None),
        );
    }
    if !diagnostics.is_empty() {
        return Err(ProfileError::Invalid { diagnostics });
    }
    let file = ProfileFile::Disk {
        path: PathBuf::from(shown),
        kind: SourceKind::Path,
    };
    merge_chain(vec![(file, layer)])
}

/// The profile a chain of files makes, leaf first: each file's settings laid over its
/// parent's, then checked as a whole (an image set somewhere, a usable name, ports that
/// the network publishes).
fn merge_chain(chain: Vec<(ProfileFile, Layer)>) -> Result<ResolvedProfile, ProfileError> {
    let files: Vec<String> = chain.iter().map(|(file, _)| file.shown()).collect();
    let Some((leaf, _)) = chain.first().cloned() else {
        return Err(ProfileError::Invalid {
            diagnostics: Vec::new(),
        });
    };
    let mut merged = MergedLayer::default();
    for (file, layer) in chain.into_iter().rev() {
        merged.overlay(layer, &file.shown());
    }
    let MergedLayer {
        mut layer,
        mut origins,
    } = merged;
    let Some(image) = layer.image.take() else {
        return Err(no_image(&files, &leaf));
    };
    if layer.name.is_none() {
        name_from_file(&leaf)?;
    }
    origins.insert("name".into(), leaf.shown());
    let profile = profile_of(layer, image, &leaf);
    ports_the_network_publishes(&profile, &origins, &leaf)?;
    Ok(ResolvedProfile {
        config_hash: config_hash(&profile),
        source: leaf.kind(),
        file: leaf.shown(),
        chain: files,
        origins,
        profile,
    })
}

/// No file of the chain (`files`, from `leaf` up) sets `image`: said at the leaf, with an
/// example.
fn no_image(files: &[String], leaf: &ProfileFile) -> ProfileError {
    let hint = if files.len() > 1 {
        format!(
            "no file of the chain {} sets `image`; add one, for example image = \"pytorch/pytorch:2.8.0-cuda12.8-cudnn9-runtime\"",
            files.join(" → ")
        )
    } else {
        "add one, for example image = \"pytorch/pytorch:2.8.0-cuda12.8-cudnn9-runtime\", or `extends` a profile that has one".into()
    };
    ProfileError::Invalid {
        diagnostics: vec![file_diagnostic(
            &leaf.shown(),
            "the profile has no `image`".into(),
            Some(hint),
        )],
    }
}

/// A profile without `name` is named after its `leaf` file: that name must be one `up`
/// and the daemon accept, refused here rather than by the daemon.
fn name_from_file(leaf: &ProfileFile) -> Result<(), ProfileError> {
    check_profile_name(&leaf.stem()).map_err(|message| ProfileError::Invalid {
        diagnostics: vec![file_diagnostic(
            &leaf.shown(),
            format!("the profile is named after its file, and {message}"),
            Some(
                "rename the file (for example `my-profile.toml`), or set `name = \"…\"` in it"
                    .into(),
            ),
        )],
    })
}

/// The merged `layer` as a profile, with its `image`, named after the `leaf` file when
/// it sets no name and every list or request left unset at its default.
fn profile_of(layer: Layer, image: ImageReference, leaf: &ProfileFile) -> Profile {
    // Destructured without `..`: a new field does not compile until it reaches the profile.
    let Layer {
        name,
        description,
        // Consumed while the chain was read; a resolved profile has no parent.
        extends: _,
        // Taken out by the caller, which refuses a chain without one.
        image: _,
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
        stack,
        commands,
    } = layer;
    Profile {
        name: name.unwrap_or_else(|| leaf.stem()),
        description,
        image,
        command,
        workdir,
        user,
        gpus: gpus.unwrap_or_default(),
        placement: placement.unwrap_or_default(),
        memory,
        cpus,
        shm_size,
        ipc,
        ports: ports.unwrap_or_default(),
        mounts: mounts.unwrap_or_default(),
        env,
        labels,
        ulimits,
        network,
        devices: devices.unwrap_or_default(),
        cap_add: cap_add.unwrap_or_default(),
        hostname,
        stack,
        commands,
    }
}

/// A network that publishes no port (`host`, `none`) beside `ports`: Docker would drop
/// the ports with a warning nobody reads. A chain may bring them from another file, so
/// both files are named (from `origins`, else the `leaf`).
fn ports_the_network_publishes(
    profile: &Profile,
    origins: &BTreeMap<String, String>,
    leaf: &ProfileFile,
) -> Result<(), ProfileError> {
    let Some(network) = profile
        .network
        .as_ref()
        .filter(|network| network.publishes_nothing())
    else {
        return Ok(());
    };
    if profile.ports.is_empty() {
        return Ok(());
    }
    let network_file = origins.get("network").cloned().unwrap_or(leaf.shown());
    let ports_file = origins.get("ports").cloned().unwrap_or(leaf.shown());
    Err(ProfileError::Invalid {
        diagnostics: vec![file_diagnostic(
            &network_file,
            format!(
                "`network = \"{network}\"` publishes no port, but `ports` (from {ports_file}) lists {}",
                profile.ports.len()
            ),
            Some(if network.as_str() == "host" {
                "with the host's network every port the container listens on is already the host's: write `ports = []`, or leave `network` out".into()
            } else {
                "write `ports = []`, or leave `network` out".into()
            }),
        )],
    })
}

/// The settings that shape the container: what the `envctl.config-hash` label hashes.
///
/// Built by destructuring [`Profile`] without `..`, so a new profile field does not compile
/// until someone decides here whether it shapes the container. Field names are the JSON
/// keys; the JSON object sorts them, so their order here does not move the hash.
#[derive(Debug, Serialize)]
pub struct ContainerShape<'a> {
    name: &'a str,
    image: String,
    command: &'a Option<Vec<String>>,
    workdir: &'a Option<String>,
    user: &'a Option<String>,
    gpus: &'a GpuRequest,
    /// In bytes, so `"8g"` and `"8192m"` hash alike.
    memory: Option<u64>,
    cpus: Option<f64>,
    shm_size: Option<u64>,
    ipc: Option<Ipc>,
    /// Docker's short syntax, one string per binding.
    ports: Vec<String>,
    /// `SOURCE:TARGET[:ro]`, one string per mount.
    mounts: Vec<String>,
    env: &'a BTreeMap<String, String>,
    /// Left out when empty, so the profiles written before `labels` existed keep their hash.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    labels: &'a BTreeMap<String, String>,
    ulimits: &'a BTreeMap<String, Ulimit>,
    // The keys below are left out when unset, so the profiles written before they
    // existed keep their hash.
    #[serde(skip_serializing_if = "Option::is_none")]
    network: Option<&'a str>,
    /// `HOST[:CONTAINER][:PERMISSIONS]`, one string per device.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    devices: Vec<String>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    cap_add: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    hostname: Option<&'a str>,
}

impl<'a> ContainerShape<'a> {
    pub fn of(profile: &'a Profile) -> Self {
        let Profile {
            name,
            // Text for people; changing it must not recreate a container.
            description: _,
            image,
            command,
            workdir,
            user,
            gpus,
            // Which GPUs a count lands on is chosen at every `up` from what is free then;
            // the profile's request (`gpus`) is what shapes the container.
            placement: _,
            memory,
            cpus,
            shm_size,
            ipc,
            ports,
            mounts,
            env,
            // A container's labels are fixed at create: a change recreates it.
            labels,
            ulimits,
            // The namespaces, devices and capabilities are fixed at create.
            network,
            devices,
            cap_add,
            hostname,
            // What the image is said to hold, for doctor; the container is the same.
            stack: _,
            // Run by `envctl exec` in a running container; they do not shape it.
            commands: _,
        } = profile;
        ContainerShape {
            name,
            image: image.to_string(),
            command,
            workdir,
            user,
            gpus,
            memory: memory.map(|size| size.bytes()),
            cpus: *cpus,
            shm_size: shm_size.map(|size| size.bytes()),
            ipc: *ipc,
            ports: ports.iter().map(ToString::to_string).collect(),
            mounts: mounts.iter().map(ToString::to_string).collect(),
            env,
            labels,
            ulimits,
            network: network.as_ref().map(|network| network.as_str()),
            devices: devices.iter().map(ToString::to_string).collect(),
            cap_add,
            hostname: hostname.as_deref(),
        }
    }
}

/// The settings that shape the container, as canonical JSON (keys sorted).
pub fn container_shape(profile: &Profile) -> serde_json::Value {
    // `json!` of a value serializes it as `serde_json::to_value` does; it fails only when a
    // `Serialize` impl reports an error, and none of the shape's fields has one that can.
    serde_json::json!(ContainerShape::of(profile))
}

/// SHA-256 of [`container_shape`]: the `envctl.config-hash` label.
pub fn config_hash(profile: &Profile) -> String {
    Sha256::digest(container_shape(profile).to_string().as_bytes())
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// Names in the order people read versions: runs of digits by their value, so
/// `pytorch-2.7` comes before `pytorch-2.10`; the rest as text.
pub fn natural_order(a: &str, b: &str) -> std::cmp::Ordering {
    fn runs(text: &str) -> Vec<(bool, &str)> {
        let mut runs = Vec::new();
        let mut start = 0;
        let bytes = text.as_bytes();
        for index in 1..=bytes.len() {
            if index == bytes.len()
                || bytes[index].is_ascii_digit() != bytes[start].is_ascii_digit()
            {
                runs.push((bytes[start].is_ascii_digit(), &text[start..index]));
                start = index;
            }
        }
        runs
    }
    let (left, right) = (runs(a), runs(b));
    for ((left_digits, left), (right_digits, right)) in left.iter().zip(&right) {
        let order = if *left_digits && *right_digits {
            let (left_value, right_value) =
                (left.trim_start_matches('0'), right.trim_start_matches('0'));
            left_value
                .len()
                .cmp(&right_value.len())
                .then_with(|| left_value.cmp(right_value))
                .then_with(|| left.len().cmp(&right.len()))
        } else {
            left.cmp(right)
        };
        if order.is_ne() {
            return order;
        }
    }
    left.len().cmp(&right.len()).then_with(|| a.cmp(b))
}

/// The `*.toml` files of a folder, sorted. A missing folder is no profiles, not an error.
fn list_directory(directory: &Path) -> Result<Vec<PathBuf>, Option<String>> {
    let entries = match std::fs::read_dir(directory) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Err(None),
        Err(error) => {
            return Err(Some(format!(
                "cannot read profile folder {}: {error}",
                directory.display()
            )));
        }
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| {
            path.extension()
                .is_some_and(|extension| extension == "toml")
                && path.file_name().is_none_or(|file| file != TEAM_FILE)
        })
        .collect();
    paths.sort();
    Ok(paths)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 31: `profiles list` sorts versions as numbers.
    #[test]
    fn versions_sort_as_numbers() {
        let mut names = vec![
            "pytorch-2.10",
            "pytorch-2.8-devel",
            "pytorch-2.7",
            "cuda-12.8-base",
            "pytorch-2.8",
            "pytorch-2.9",
            "pytorch-2.8-cu126",
            "a",
            "",
        ];
        names.sort_by(|a, b| natural_order(a, b));
        assert_eq!(
            names,
            [
                "",
                "a",
                "cuda-12.8-base",
                "pytorch-2.7",
                "pytorch-2.8",
                "pytorch-2.8-cu126",
                "pytorch-2.8-devel",
                "pytorch-2.9",
                "pytorch-2.10",
            ]
        );
        let listed: Vec<String> = bundled_only()
            .list()
            .0
            .into_iter()
            .map(|profile| profile.name)
            .collect();
        let seven = listed.iter().position(|name| name == "pytorch-2.7");
        let ten = listed.iter().position(|name| name == "pytorch-2.10");
        assert!(seven < ten, "{listed:?}");
    }

    /// Issue 40: a misspelt `extends` gets the nearest profile's name, as a misspelt
    /// `up NAME` does, beside the folders looked in; a name near nothing gets those alone.
    #[test]
    fn a_misspelt_extends_names_the_nearest_profile() {
        let folder = tempfile::tempdir().unwrap();
        std::fs::write(
            folder.path().join("near.toml"),
            "extends = \"pytorch-2.88\"\n",
        )
        .unwrap();
        std::fs::write(folder.path().join("far.toml"), "extends = \"zzzzzzzzzz\"\n").unwrap();
        let search = SearchPath::new(folder.path().to_path_buf(), Vec::new(), None);
        let hint = |name: &str| match search.resolve(name) {
            Err(ProfileError::Invalid { diagnostics }) => diagnostics[0].hint.clone().unwrap(),
            other => panic!("{other:?}"),
        };
        let near = hint("near");
        assert!(
            near.starts_with("did you mean `pytorch-2.8`? (looked in: "),
            "{near}"
        );
        let far = hint("far");
        assert!(
            far.starts_with("looked in: ") && !far.contains("did you mean"),
            "{far}"
        );
    }

    /// The bundled profiles, resolved without any folder on disk.
    fn on_disk(path: &str) -> ProfileFile {
        ProfileFile::Disk {
            path: PathBuf::from(path),
            kind: SourceKind::Path,
        }
    }

    #[test]
    fn a_chain_without_an_image_names_every_file() {
        let message = |files: &[&str]| {
            let files: Vec<String> = files.iter().map(|file| file.to_string()).collect();
            match no_image(&files, &on_disk("leaf.toml")) {
                ProfileError::Invalid { diagnostics } => format!(
                    "{} {}",
                    diagnostics[0].message,
                    diagnostics[0].hint.clone().unwrap_or_default()
                ),
                other => panic!("{other:?}"),
            }
        };
        assert!(message(&["leaf.toml", "base.toml"]).contains("leaf.toml → base.toml"));
        assert!(message(&["leaf.toml"]).contains("`extends` a profile that has one"));
    }

    #[test]
    fn a_profile_named_after_its_file_needs_a_usable_file_name() {
        assert!(name_from_file(&on_disk("team.toml")).is_ok());
        assert!(name_from_file(&on_disk("Team Profile!.toml")).is_err());
    }

    fn bundled_only() -> SearchPath {
        SearchPath {
            locations: vec![Location {
                kind: SourceKind::Bundled,
                directory: None,
            }],
        }
    }

    /// Running containers carry this hash as a label: if it moves, `up` recreates every
    /// container of the profile. The values were computed before the shape became a struct.
    #[test]
    fn config_hash_of_a_bundled_profile_is_pinned() {
        let resolved = bundled_only()
            .resolve("pytorch-2.8")
            .unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(
            resolved.config_hash,
            "d8bd510d8bf8d4574b213c84f528f199d5299d7980b81e205353d25d6dc805f0"
        );
    }

    #[test]
    fn config_hash_of_every_shaping_field_is_pinned() {
        let text = r#"
name = "every-field"
description = "left out of the hash"
image = "registry.example:5000/team/train:1.0@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
command = ["python", "train.py"]
workdir = "/workspace"
user = "1000:1000"
gpus = ["0", "1"]
memory = "32g"
cpus = 7.5
shm_size = "8g"
ipc = "host"
ports = ["127.0.0.1:8888:8888", "0.0.0.0:6000-6001:7000-7001/udp"]
mounts = ["./data:/data:ro", "cache:/cache"]
env = { B = "2", A = "1" }

[ulimits]
memlock = -1
nofile = { soft = 1024, hard = 4096 }

[stack]
cuda = "12.8"

[commands]
train = ["python", "train.py"]
"#;
        let resolved =
            resolve_text("every-field.toml", text).unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(
            resolved.config_hash,
            "1036fe0a8a1cf6991ce8c173535309b18472fdf1c6f406396669a858e4f55764"
        );
    }
}
