//! Shared helpers for envctl's integration tests.
//!
//! Declared once, by the one integration binary (`tests/it/main.rs`); its test modules
//! use what they need as `crate::support::…`. Unused helpers do not warn (`dead_code` is
//! allowed here).
//!
//! - [`docker`]: is the daemon there ([`docker::require_daemon`]), a tiny local test image
//!   built from Debian's static busybox ([`docker::test_image`]), collision-free names
//!   ([`docker::unique_name`]) and guards that remove containers and image tags on drop,
//!   even when the test panics.
//! - [`registry`]: a real registry (Debian's `docker-registry`) on a free loopback port
//!   with its storage in a temporary directory ([`registry::Registry::start`]), and
//!   [`registry::push_test_image`] to put the test image into it.
//!
//! - [`engines`]: Docker and the Podman services of `ENVCTL_TEST_PODMAN`, each driven by
//!   `docker -H` and envctl with `DOCKER_HOST`; [`engines::for_each_engine`] collects
//!   every engine's failures of one test.
//! - [`fake_daemon`]: a fake Docker daemon on a unix socket with canned answers (slow
//!   headers, a body one byte a second, 500, bad JSON, a 50 MB error) and a record of the
//!   requests it got ([`fake_daemon::FakeDaemon::start`]); point `DOCKER_HOST` at it.
//! - [`cli`]: envctl as a test runs it, built by [`cli::Envctl`]: the folder (or none, or
//!   another machine's view of it), the stand-in NVML fixture, the daemon, arguments and
//!   stdin, then a [`cli::Run`] (exit code and both streams).
//! - [`cuda_images`]: test images built FROM the test image with nvidia-check's stand-ins,
//!   its recorded scenarios, or a package's real CUDA libraries in site-packages
//!   ([`cuda_images::ImageBuild`]).
//! - [`server`]: another machine for a test ([`server::Server::start`]): a daemon of the
//!   test's own in its own network and UTS namespace (its own host name), with the stand-in
//!   NVIDIA hook whose `nvidia-smi` answers from a [`server::Fixture`] (or no toolkit).
//! - [`signal`]: a signal sent to a child envctl, and its end awaited with a limit.
//! - [`disk`]: a full disk ([`disk::FullDisk`]: a 64 KiB tmpfs, filled; needs root).
//! - [`nvml`]: the stand-in NVML library `cargo test` builds, its fixtures, and an
//!   old-driver library compiled from C.
//! - [`tmux`]: a real terminal for the full-screen views ([`tmux::Tmux::start`]: a detached
//!   session on a tmux server of the test's own, read with `capture-pane`, keys sent with
//!   `send-keys`) and [`tmux::Recording`], a script that records the terminal settings
//!   before and after a command and prints its exit code. Without tmux the test skips, or
//!   fails when `ENVCTL_REQUIRE_DOCKER=1`.
//! - [`wait`]: waits on a condition with a deadline and a message saying what was awaited
//!   ([`wait::wait_for`]), a child's output gathered as it comes ([`wait::Collected`]),
//!   the processes of a container, a writer blocked on a full pipe, a TCP connection's
//!   queues, a process below another.
//!
//! Skip or fail: without a daemon (or without the registry binary, Compose, Podman,
//! promtool, tmux, chromium…) a test prints `SKIPPED (<reason>): <test>` on stderr, records
//! it in the skip log (`docker::skip_log`; `bash .ci/skipped ARGS…` runs `cargo test ARGS…`
//! and closes with one line, `N skipped: …`) and returns early — unless
//! `ENVCTL_REQUIRE_DOCKER=1` is set (as `.ci/run` does), in which case it panics with what
//! failed and how to fix it. Anything a test creates carries the label `envctl.test=1`
//! (inherited from the test image), so `.ci/run` can sweep leftovers.
#![allow(dead_code)]

pub mod cli;
pub mod cuda_images;
pub mod disk;
pub mod docker;
pub mod engines;
pub mod fake_daemon;
pub mod nvml;
pub mod registry;
pub mod server;
pub mod signal;
pub mod slurm;
pub mod tmux;
pub mod wait;
