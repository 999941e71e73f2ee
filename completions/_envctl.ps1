
using namespace System.Management.Automation
using namespace System.Management.Automation.Language

Register-ArgumentCompleter -Native -CommandName 'envctl' -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)

    $commandElements = $commandAst.CommandElements
    $command = @(
        'envctl'
        for ($i = 1; $i -lt $commandElements.Count; $i++) {
            $element = $commandElements[$i]
            if ($element -isnot [StringConstantExpressionAst] -or
                $element.StringConstantType -ne [StringConstantType]::BareWord -or
                $element.Value.StartsWith('-') -or
                $element.Value -eq $wordToComplete) {
                break
        }
        $element.Value
    }) -join ';'

    $completions = @(switch ($command) {
        'envctl' {
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour the output (NO_COLOR is honoured with `auto`)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document (with `schema_version`) on stdout instead of text')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Print more detail on stderr')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Print more detail on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('doctor', 'doctor', [CompletionResultType]::ParameterValue, 'Check this host (driver, GPUs, Docker, NVIDIA runtime) and each profile against it')
            [CompletionResult]::new('compat', 'compat', [CompletionResultType]::ParameterValue, 'The doctor''s verdicts for a host you describe: driver, GPUs, image CUDA and torch')
            [CompletionResult]::new('profiles', 'profiles', [CompletionResultType]::ParameterValue, 'List, show, check and create profiles')
            [CompletionResult]::new('up', 'up', [CompletionResultType]::ParameterValue, 'Check, pull, create and start a profile''s container (detached)')
            [CompletionResult]::new('exec', 'exec', [CompletionResultType]::ParameterValue, 'Run a command in a running container; its exit code is envctl''s')
            [CompletionResult]::new('shell', 'shell', [CompletionResultType]::ParameterValue, 'Open an interactive shell (bash when the image has it, else sh)')
            [CompletionResult]::new('ps', 'ps', [CompletionResultType]::ParameterValue, 'List envctl''s containers: profile, image, status, ports, GPUs, drift')
            [CompletionResult]::new('down', 'down', [CompletionResultType]::ParameterValue, 'Stop a container (host data is never touched)')
            [CompletionResult]::new('logs', 'logs', [CompletionResultType]::ParameterValue, 'Print a container''s logs')
            [CompletionResult]::new('export', 'export', [CompletionResultType]::ParameterValue, 'The same environment for docker compose, Kubernetes, devcontainers or docker run')
            [CompletionResult]::new('stats', 'stats', [CompletionResultType]::ParameterValue, 'Container CPU/memory next to GPU utilisation, memory, temperature and power')
            [CompletionResult]::new('lock', 'lock', [CompletionResultType]::ParameterValue, 'Pin image tags to digests in envctl.lock')
            [CompletionResult]::new('outdated', 'outdated', [CompletionResultType]::ParameterValue, 'Newer tags of the same family, and new digests behind the same tag')
            [CompletionResult]::new('completions', 'completions', [CompletionResultType]::ParameterValue, 'Print a shell completion script')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'envctl;doctor' {
            [CompletionResult]::new('--matrix', '--matrix', [CompletionResultType]::ParameterName, 'A compatibility matrix file whose rows add to or replace the bundled ones')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour the output (NO_COLOR is honoured with `auto`)')
            [CompletionResult]::new('--strict', '--strict', [CompletionResultType]::ParameterName, 'Treat warnings as failures (exit 1)')
            [CompletionResult]::new('--matrix-info', '--matrix-info', [CompletionResultType]::ParameterName, 'Print the matrix''s date, row counts and sources, and exit')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document (with `schema_version`) on stdout instead of text')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Print more detail on stderr')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Print more detail on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'envctl;compat' {
            [CompletionResult]::new('--profile', '--profile', [CompletionResultType]::ParameterName, 'Take CUDA and torch from this profile''s [stack]')
            [CompletionResult]::new('--image-cuda', '--image-cuda', [CompletionResultType]::ParameterName, 'The image''s CUDA release, e.g. 12.8 (default: the CUDA of --torch''s +cuXYZ)')
            [CompletionResult]::new('--torch', '--torch', [CompletionResultType]::ParameterName, 'The image''s torch build, e.g. 2.8.0+cu128 (+cu128 names CUDA 12.8)')
            [CompletionResult]::new('--driver', '--driver', [CompletionResultType]::ParameterName, 'The host''s NVIDIA driver, e.g. 550.54.15')
            [CompletionResult]::new('--gpu', '--gpu', [CompletionResultType]::ParameterName, 'A GPU model as NVML or nvidia-smi names it (repeat for mixed hosts)')
            [CompletionResult]::new('--cc', '--cc', [CompletionResultType]::ParameterName, 'A GPU by compute capability, e.g. 8.9 (repeat for mixed hosts)')
            [CompletionResult]::new('--matrix', '--matrix', [CompletionResultType]::ParameterName, 'A compatibility matrix file whose rows add to or replace the bundled ones')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour the output (NO_COLOR is honoured with `auto`)')
            [CompletionResult]::new('--datacenter', '--datacenter', [CompletionResultType]::ParameterName, 'The GPUs are data-center parts (H100, A100, … are known by name): below a CUDA major''s driver floor, the verdict says what cuda-compat forward compatibility offers')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document (with `schema_version`) on stdout instead of text')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Print more detail on stderr')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Print more detail on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'envctl;profiles' {
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour the output (NO_COLOR is honoured with `auto`)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document (with `schema_version`) on stdout instead of text')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Print more detail on stderr')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Print more detail on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List the profiles envctl finds, with where each comes from')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Print a profile with `extends` applied, and which file set each key')
            [CompletionResult]::new('check', 'check', [CompletionResultType]::ParameterValue, 'Validate profile files; every problem is reported with file:line:column')
            [CompletionResult]::new('new', 'new', [CompletionResultType]::ParameterValue, 'Start a team profile in ./envctl/NAME.toml')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'envctl;profiles;list' {
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour the output (NO_COLOR is honoured with `auto`)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document (with `schema_version`) on stdout instead of text')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Print more detail on stderr')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Print more detail on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'envctl;profiles;show' {
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour the output (NO_COLOR is honoured with `auto`)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document (with `schema_version`) on stdout instead of text')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Print more detail on stderr')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Print more detail on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'envctl;profiles;check' {
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour the output (NO_COLOR is honoured with `auto`)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document (with `schema_version`) on stdout instead of text')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Print more detail on stderr')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Print more detail on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'envctl;profiles;new' {
            [CompletionResult]::new('--from', '--from', [CompletionResultType]::ParameterName, 'Copy this profile (resolved) instead of the starter template')
            [CompletionResult]::new('--directory', '--directory', [CompletionResultType]::ParameterName, 'Folder to write into')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour the output (NO_COLOR is honoured with `auto`)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document (with `schema_version`) on stdout instead of text')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Print more detail on stderr')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Print more detail on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'envctl;profiles;help' {
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List the profiles envctl finds, with where each comes from')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Print a profile with `extends` applied, and which file set each key')
            [CompletionResult]::new('check', 'check', [CompletionResultType]::ParameterValue, 'Validate profile files; every problem is reported with file:line:column')
            [CompletionResult]::new('new', 'new', [CompletionResultType]::ParameterValue, 'Start a team profile in ./envctl/NAME.toml')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'envctl;profiles;help;list' {
            break
        }
        'envctl;profiles;help;show' {
            break
        }
        'envctl;profiles;help;check' {
            break
        }
        'envctl;profiles;help;new' {
            break
        }
        'envctl;profiles;help;help' {
            break
        }
        'envctl;up' {
            [CompletionResult]::new('--name', '--name', [CompletionResultType]::ParameterName, 'Container name (default: envctl-PROFILE)')
            [CompletionResult]::new('--pull', '--pull', [CompletionResultType]::ParameterName, 'When to pull the image')
            [CompletionResult]::new('-e', '-e', [CompletionResultType]::ParameterName, 'Set an environment variable (KEY=VALUE, or KEY to take it from this shell)')
            [CompletionResult]::new('--env', '--env', [CompletionResultType]::ParameterName, 'Set an environment variable (KEY=VALUE, or KEY to take it from this shell)')
            [CompletionResult]::new('-p', '-p', [CompletionResultType]::ParameterName, 'Publish a port, docker syntax ([IP:]HOST:CONTAINER[/PROTOCOL]); loopback by default')
            [CompletionResult]::new('--publish', '--publish', [CompletionResultType]::ParameterName, 'Publish a port, docker syntax ([IP:]HOST:CONTAINER[/PROTOCOL]); loopback by default')
            [CompletionResult]::new('--volume', '--volume', [CompletionResultType]::ParameterName, 'Mount SOURCE:TARGET[:ro] (no `-v`: that is --verbose)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour the output (NO_COLOR is honoured with `auto`)')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Print the equivalent `docker run` (with --json: the exact create body) and do nothing')
            [CompletionResult]::new('--force', '--force', [CompletionResultType]::ParameterName, 'Start even when doctor''s checks fail')
            [CompletionResult]::new('--recreate', '--recreate', [CompletionResultType]::ParameterName, 'Replace the container when the profile changed since it was created')
            [CompletionResult]::new('--locked', '--locked', [CompletionResultType]::ParameterName, 'Fail unless envctl.lock pins this profile''s current image')
            [CompletionResult]::new('--check', '--check', [CompletionResultType]::ParameterName, 'Run `nvidia-check` in the container once it started (its exit code is up''s)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document (with `schema_version`) on stdout instead of text')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Print more detail on stderr')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Print more detail on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'envctl;exec' {
            [CompletionResult]::new('-u', '-u', [CompletionResultType]::ParameterName, 'Run as this user (name, uid or uid:gid)')
            [CompletionResult]::new('--user', '--user', [CompletionResultType]::ParameterName, 'Run as this user (name, uid or uid:gid)')
            [CompletionResult]::new('-w', '-w', [CompletionResultType]::ParameterName, 'Run in this folder in the container')
            [CompletionResult]::new('--workdir', '--workdir', [CompletionResultType]::ParameterName, 'Run in this folder in the container')
            [CompletionResult]::new('-e', '-e', [CompletionResultType]::ParameterName, 'Set an environment variable')
            [CompletionResult]::new('--env', '--env', [CompletionResultType]::ParameterName, 'Set an environment variable')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'nvidia-check: give up after this many seconds (default 120, at most a day)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour the output (NO_COLOR is honoured with `auto`)')
            [CompletionResult]::new('-t', '-t', [CompletionResultType]::ParameterName, 'Allocate a terminal (for interactive programs)')
            [CompletionResult]::new('--tty', '--tty', [CompletionResultType]::ParameterName, 'Allocate a terminal (for interactive programs)')
            [CompletionResult]::new('--quick', '--quick', [CompletionResultType]::ParameterName, 'nvidia-check: skip the timed matmul and the copy bandwidth')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document (with `schema_version`) on stdout instead of text')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Print more detail on stderr')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Print more detail on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'envctl;shell' {
            [CompletionResult]::new('-u', '-u', [CompletionResultType]::ParameterName, 'Run as this user')
            [CompletionResult]::new('--user', '--user', [CompletionResultType]::ParameterName, 'Run as this user')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour the output (NO_COLOR is honoured with `auto`)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document (with `schema_version`) on stdout instead of text')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Print more detail on stderr')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Print more detail on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'envctl;ps' {
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour the output (NO_COLOR is honoured with `auto`)')
            [CompletionResult]::new('-a', '-a', [CompletionResultType]::ParameterName, 'Include stopped containers')
            [CompletionResult]::new('--all', '--all', [CompletionResultType]::ParameterName, 'Include stopped containers')
            [CompletionResult]::new('--no-trunc', '--no-trunc', [CompletionResultType]::ParameterName, 'Show image references and ids whole (pinned digests are cut to 12 hex digits)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document (with `schema_version`) on stdout instead of text')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Print more detail on stderr')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Print more detail on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'envctl;down' {
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Seconds to wait for a clean stop before killing (at most 86400)')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour the output (NO_COLOR is honoured with `auto`)')
            [CompletionResult]::new('--rm', '--rm', [CompletionResultType]::ParameterName, 'Also remove the container')
            [CompletionResult]::new('--volumes', '--volumes', [CompletionResultType]::ParameterName, 'Also remove the named volumes it uses (implies --rm)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document (with `schema_version`) on stdout instead of text')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Print more detail on stderr')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Print more detail on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'envctl;logs' {
            [CompletionResult]::new('--tail', '--tail', [CompletionResultType]::ParameterName, 'Only the last N lines')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour the output (NO_COLOR is honoured with `auto`)')
            [CompletionResult]::new('-f', '-f', [CompletionResultType]::ParameterName, 'Keep printing new output until the container stops')
            [CompletionResult]::new('--follow', '--follow', [CompletionResultType]::ParameterName, 'Keep printing new output until the container stops')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document (with `schema_version`) on stdout instead of text')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Print more detail on stderr')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Print more detail on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'envctl;export' {
            [CompletionResult]::new('--to', '--to', [CompletionResultType]::ParameterName, 'What to write')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Write to FILE instead of stdout (atomically; an existing FILE only with --force)')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Write to FILE instead of stdout (atomically; an existing FILE only with --force)')
            [CompletionResult]::new('--kind', '--kind', [CompletionResultType]::ParameterName, 'Kubernetes workload that runs the container [default: job]')
            [CompletionResult]::new('--volumes', '--volumes', [CompletionResultType]::ParameterName, 'How Kubernetes mounts bind sources: the node''s path, or a PersistentVolumeClaim [default: hostpath]')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour the output (NO_COLOR is honoured with `auto`)')
            [CompletionResult]::new('--force', '--force', [CompletionResultType]::ParameterName, 'Replace FILE when it exists')
            [CompletionResult]::new('--service', '--service', [CompletionResultType]::ParameterName, 'Also write a Kubernetes Service for the published ports')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document (with `schema_version`) on stdout instead of text')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Print more detail on stderr')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Print more detail on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'envctl;stats' {
            [CompletionResult]::new('--interval', '--interval', [CompletionResultType]::ParameterName, 'Time between samples: seconds, or with a unit (500ms, 2s, 1m)')
            [CompletionResult]::new('--count', '--count', [CompletionResultType]::ParameterName, 'Stop after N samples')
            [CompletionResult]::new('--record', '--record', [CompletionResultType]::ParameterName, 'Append every sample to FILE: CSV (.csv) or JSON lines (.jsonl)')
            [CompletionResult]::new('--serve', '--serve', [CompletionResultType]::ParameterName, 'Serve Prometheus metrics at ADDR [default: 127.0.0.1:9400]')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour the output (NO_COLOR is honoured with `auto`)')
            [CompletionResult]::new('-a', '-a', [CompletionResultType]::ParameterName, 'Every running container, not only envctl''s')
            [CompletionResult]::new('--all', '--all', [CompletionResultType]::ParameterName, 'Every running container, not only envctl''s')
            [CompletionResult]::new('--once', '--once', [CompletionResultType]::ParameterName, 'One snapshot, then exit')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document (with `schema_version`) on stdout instead of text')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Print more detail on stderr')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Print more detail on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('report', 'report', [CompletionResultType]::ParameterValue, 'Draw a recording''s time series: CPU, memory, GPU utilisation, GPU memory, temperature')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'envctl;stats;report' {
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Where to write the drawing: .svg, or .html with a summary and the diagnoses; `-` writes the SVG to stdout')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Where to write the drawing: .svg, or .html with a summary and the diagnoses; `-` writes the SVG to stdout')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour the output (NO_COLOR is honoured with `auto`)')
            [CompletionResult]::new('--force', '--force', [CompletionResultType]::ParameterName, 'Replace OUT when it exists')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document (with `schema_version`) on stdout instead of text')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Print more detail on stderr')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Print more detail on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'envctl;stats;help' {
            [CompletionResult]::new('report', 'report', [CompletionResultType]::ParameterValue, 'Draw a recording''s time series: CPU, memory, GPU utilisation, GPU memory, temperature')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'envctl;stats;help;report' {
            break
        }
        'envctl;stats;help;help' {
            break
        }
        'envctl;lock' {
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour the output (NO_COLOR is honoured with `auto`)')
            [CompletionResult]::new('--update', '--update', [CompletionResultType]::ParameterName, 'Pull again to pick up where each tag points now')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document (with `schema_version`) on stdout instead of text')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Print more detail on stderr')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Print more detail on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'envctl;outdated' {
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour the output (NO_COLOR is honoured with `auto`)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document (with `schema_version`) on stdout instead of text')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Print more detail on stderr')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Print more detail on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'envctl;completions' {
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to colour the output (NO_COLOR is honoured with `auto`)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document (with `schema_version`) on stdout instead of text')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print only data and errors')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Print more detail on stderr')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Print more detail on stderr')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'envctl;help' {
            [CompletionResult]::new('doctor', 'doctor', [CompletionResultType]::ParameterValue, 'Check this host (driver, GPUs, Docker, NVIDIA runtime) and each profile against it')
            [CompletionResult]::new('compat', 'compat', [CompletionResultType]::ParameterValue, 'The doctor''s verdicts for a host you describe: driver, GPUs, image CUDA and torch')
            [CompletionResult]::new('profiles', 'profiles', [CompletionResultType]::ParameterValue, 'List, show, check and create profiles')
            [CompletionResult]::new('up', 'up', [CompletionResultType]::ParameterValue, 'Check, pull, create and start a profile''s container (detached)')
            [CompletionResult]::new('exec', 'exec', [CompletionResultType]::ParameterValue, 'Run a command in a running container; its exit code is envctl''s')
            [CompletionResult]::new('shell', 'shell', [CompletionResultType]::ParameterValue, 'Open an interactive shell (bash when the image has it, else sh)')
            [CompletionResult]::new('ps', 'ps', [CompletionResultType]::ParameterValue, 'List envctl''s containers: profile, image, status, ports, GPUs, drift')
            [CompletionResult]::new('down', 'down', [CompletionResultType]::ParameterValue, 'Stop a container (host data is never touched)')
            [CompletionResult]::new('logs', 'logs', [CompletionResultType]::ParameterValue, 'Print a container''s logs')
            [CompletionResult]::new('export', 'export', [CompletionResultType]::ParameterValue, 'The same environment for docker compose, Kubernetes, devcontainers or docker run')
            [CompletionResult]::new('stats', 'stats', [CompletionResultType]::ParameterValue, 'Container CPU/memory next to GPU utilisation, memory, temperature and power')
            [CompletionResult]::new('lock', 'lock', [CompletionResultType]::ParameterValue, 'Pin image tags to digests in envctl.lock')
            [CompletionResult]::new('outdated', 'outdated', [CompletionResultType]::ParameterValue, 'Newer tags of the same family, and new digests behind the same tag')
            [CompletionResult]::new('completions', 'completions', [CompletionResultType]::ParameterValue, 'Print a shell completion script')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'envctl;help;doctor' {
            break
        }
        'envctl;help;compat' {
            break
        }
        'envctl;help;profiles' {
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List the profiles envctl finds, with where each comes from')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Print a profile with `extends` applied, and which file set each key')
            [CompletionResult]::new('check', 'check', [CompletionResultType]::ParameterValue, 'Validate profile files; every problem is reported with file:line:column')
            [CompletionResult]::new('new', 'new', [CompletionResultType]::ParameterValue, 'Start a team profile in ./envctl/NAME.toml')
            break
        }
        'envctl;help;profiles;list' {
            break
        }
        'envctl;help;profiles;show' {
            break
        }
        'envctl;help;profiles;check' {
            break
        }
        'envctl;help;profiles;new' {
            break
        }
        'envctl;help;up' {
            break
        }
        'envctl;help;exec' {
            break
        }
        'envctl;help;shell' {
            break
        }
        'envctl;help;ps' {
            break
        }
        'envctl;help;down' {
            break
        }
        'envctl;help;logs' {
            break
        }
        'envctl;help;export' {
            break
        }
        'envctl;help;stats' {
            [CompletionResult]::new('report', 'report', [CompletionResultType]::ParameterValue, 'Draw a recording''s time series: CPU, memory, GPU utilisation, GPU memory, temperature')
            break
        }
        'envctl;help;stats;report' {
            break
        }
        'envctl;help;lock' {
            break
        }
        'envctl;help;outdated' {
            break
        }
        'envctl;help;completions' {
            break
        }
        'envctl;help;help' {
            break
        }
    })

    $completions.Where{ $_.CompletionText -like "$wordToComplete*" } |
        Sort-Object -Property ListItemText
}
