//! envctl as a test runs it: in a folder of the test's own, with no user configuration,
//! no extra profile folders, no colour and no NVML library chosen by the environment.

use std::path::Path;

/// The built binary with `directory` as its working directory (`./envctl/` profiles are
/// found there), `$XDG_CONFIG_HOME` and `$HOME` inside it, so only what the test puts
/// there and the bundled profiles are found.
pub fn envctl_in(directory: &Path) -> assert_cmd::Command {
    let mut command = assert_cmd::Command::cargo_bin("envctl")
        .unwrap_or_else(|error| panic!("the envctl binary is not built: {error}"));
    command
        .current_dir(directory)
        .env("NO_COLOR", "1")
        .env("XDG_CONFIG_HOME", directory.join("xdg"))
        .env("HOME", directory.join("home"))
        .env_remove("ENVCTL_PROFILE_PATH")
        .env_remove("ENVCTL_NVML_LIBRARY")
        .env_remove("ENVCTL_NVML_STUB_FIXTURE")
        .env_remove("CLICOLOR_FORCE");
    command
}
