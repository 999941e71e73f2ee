//! The check scripts embedded in the binary, and the command lines that run them inside a
//! container through exec (the scripts travel as arguments: nothing is mounted or copied).

/// The shell half: device files, nvidia-smi, /dev/shm, ulimits, the GPU variables; then it
/// runs the Python half under a watchdog.
pub const SHELL_SCRIPT: &str = include_str!("nvidia_check.sh");

/// The Python half: torch, CUDA, the devices, the compute checks. Also runnable by hand
/// (`python3 src/nvcheck/nvidia_check.py`) to record a fixture.
pub const PYTHON_SCRIPT: &str = include_str!("nvidia_check.py");

/// The interpreters tried, in order, when the image has no `sh`.
pub const PYTHON_NAMES: [&str; 2] = ["python3", "python"];

/// `sh -c SHELL_SCRIPT envctl-nvidia-check PYTHON_SCRIPT SECONDS QUICK`.
pub fn shell_command(timeout_seconds: u64, quick: bool) -> Vec<String> {
    vec![
        "sh".to_string(),
        "-c".to_string(),
        SHELL_SCRIPT.to_string(),
        // $0 of the script, which names it in `ps` and in the shell's own messages.
        "envctl-nvidia-check".to_string(),
        PYTHON_SCRIPT.to_string(),
        timeout_seconds.to_string(),
        if quick { "1" } else { "0" }.to_string(),
    ]
}

/// The Python half alone, for an image without a shell: `python3 -c SOURCE --envctl-wrapped
/// --budget SECONDS [--quick]`.
pub fn python_command(interpreter: &str, budget_seconds: u64, quick: bool) -> Vec<String> {
    let mut command = vec![
        interpreter.to_string(),
        "-c".to_string(),
        PYTHON_SCRIPT.to_string(),
        "--envctl-wrapped".to_string(),
        "--budget".to_string(),
        budget_seconds.to_string(),
    ];
    if quick {
        command.push("--quick".to_string());
    }
    command
}
