//! envctl's integration tests, all in one test binary (`cargo test --test it`).
//!
//! Each module was once a file of its own in `tests/`, and so a binary of its own that
//! linked the whole crate and its own copy of [`support`]; one binary links once. Most
//! tests run the built `envctl` as a subprocess (assert_cmd), so sharing a process costs
//! them nothing. What is process-global stays out of this process: NVML is only loaded in
//! a child that [`gpu_facts`] starts from this same binary, and no test changes the
//! environment, the current directory or signal dispositions of the test process.
//!
//! Run one module with a filter: `cargo test --test it doctor::`. Insta snapshots live in a
//! `snapshots/` folder beside the file whose test takes them (`tests/it/snapshots/` for a
//! one-file module, `tests/it/up/snapshots/` for `up/`'s), named `it__<module path>__<name>.snap`.
//!
//! Data the tests read stays beside this folder: `tests/fixtures/`, `tests/corpus/`,
//! `tests/fuzz-corpus/`, and the stand-in NVML library `tests/nvml-stub/`.

// The tests are the process environment's other reader: they read ENVCTL_REQUIRE_DOCKER,
// CI and the like to decide how to run, and hand variables to the envctl they start.
#![allow(clippy::disallowed_methods)]

mod support;

mod cli;
mod compat_cli;
mod completions;
mod compose_runs;
mod daemon_answers;
mod daemon_choice;
mod daemon_loss;
mod daemon_streams;
mod dashboard;
mod docker_habits;
mod docker_support;
mod doctor;
mod doctor_libraries;
mod engine_facts;
mod engine_kind;
mod engines;
mod exec;
mod export;
mod export_clusters;
mod export_origin;
mod fatbin_corpus;
mod faults;
mod fleet_race;
mod forward;
mod gpu_facts;
mod gpu_health;
mod gpu_keepout;
mod hardening;
mod human_output;
mod identity;
mod impostor;
mod labels;
mod lock;
mod newcomer;
mod nvidia_check;
mod nvidia_check_here;
mod ownership_hardening;
mod placement;
mod policy;
mod policy_push;
mod profile_corpus;
mod profile_safety;
mod readme;
mod registry_paging;
mod registry_proxy;
mod remote_daemons;
mod remote_facts;
mod remote_hardening;
mod report;
mod run;
mod secrets;
mod serve;
mod shared_server;
mod slurm;
mod spec_equivalence;
mod stats;
mod stats_files;
mod targets;
mod team_identity;
mod team_view;
mod terminal_text;
mod trust;
mod up;
mod up_hosts;
mod validators;
