
use builtin;
use str;

set edit:completion:arg-completer[envctl] = {|@words|
    fn spaces {|n|
        builtin:repeat $n ' ' | str:join ''
    }
    fn cand {|text desc|
        edit:complex-candidate $text &display=$text' '(spaces (- 14 (wcswidth $text)))$desc
    }
    var command = 'envctl'
    for word $words[1..-1] {
        if (str:has-prefix $word '-') {
            break
        }
        set command = $command';'$word
    }
    var completions = [
        &'envctl'= {
            cand --color 'When to colour the output (NO_COLOR is honoured with `auto`)'
            cand --json 'Print one JSON document (with `schema_version`) on stdout instead of text'
            cand -q 'Print only data and errors'
            cand --quiet 'Print only data and errors'
            cand -v 'Print more detail on stderr'
            cand --verbose 'Print more detail on stderr'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
            cand doctor 'Check this host (driver, GPUs, Docker, NVIDIA runtime) and each profile against it'
            cand compat 'The doctor''s verdicts for a host you describe: driver, GPUs, image CUDA and torch'
            cand profiles 'List, show, check and create profiles'
            cand up 'Check, pull, create and start a profile''s container (detached)'
            cand exec 'Run a command in a running container; its exit code is envctl''s'
            cand shell 'Open an interactive shell (bash when the image has it, else sh)'
            cand ps 'List envctl''s containers: profile, image, status, ports, GPUs, drift'
            cand down 'Stop a container (host data is never touched)'
            cand logs 'Print a container''s logs'
            cand export 'The same environment for docker compose, Kubernetes, devcontainers or docker run'
            cand stats 'Container CPU/memory next to GPU utilisation, memory, temperature and power'
            cand lock 'Pin image tags to digests in envctl.lock'
            cand outdated 'Newer tags of the same family, and new digests behind the same tag'
            cand completions 'Print a shell completion script'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'envctl;doctor'= {
            cand --matrix 'A compatibility matrix file whose rows add to or replace the bundled ones'
            cand --color 'When to colour the output (NO_COLOR is honoured with `auto`)'
            cand --strict 'Treat warnings as failures (exit 1)'
            cand --matrix-info 'Print the matrix''s date, row counts and sources, and exit'
            cand --json 'Print one JSON document (with `schema_version`) on stdout instead of text'
            cand -q 'Print only data and errors'
            cand --quiet 'Print only data and errors'
            cand -v 'Print more detail on stderr'
            cand --verbose 'Print more detail on stderr'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'envctl;compat'= {
            cand --profile 'Take CUDA and torch from this profile''s [stack]'
            cand --image-cuda 'The image''s CUDA release, e.g. 12.8 (default: the CUDA of --torch''s +cuXYZ)'
            cand --torch 'The image''s torch build, e.g. 2.8.0+cu128 (+cu128 names CUDA 12.8)'
            cand --driver 'The host''s NVIDIA driver, e.g. 550.54.15'
            cand --gpu 'A GPU model as NVML or nvidia-smi names it (repeat for mixed hosts)'
            cand --cc 'A GPU by compute capability, e.g. 8.9 (repeat for mixed hosts)'
            cand --matrix 'A compatibility matrix file whose rows add to or replace the bundled ones'
            cand --color 'When to colour the output (NO_COLOR is honoured with `auto`)'
            cand --datacenter 'The GPUs are data-center parts (H100, A100, … are known by name): below a CUDA major''s driver floor, the verdict says what cuda-compat forward compatibility offers'
            cand --json 'Print one JSON document (with `schema_version`) on stdout instead of text'
            cand -q 'Print only data and errors'
            cand --quiet 'Print only data and errors'
            cand -v 'Print more detail on stderr'
            cand --verbose 'Print more detail on stderr'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'envctl;profiles'= {
            cand --color 'When to colour the output (NO_COLOR is honoured with `auto`)'
            cand --json 'Print one JSON document (with `schema_version`) on stdout instead of text'
            cand -q 'Print only data and errors'
            cand --quiet 'Print only data and errors'
            cand -v 'Print more detail on stderr'
            cand --verbose 'Print more detail on stderr'
            cand -h 'Print help'
            cand --help 'Print help'
            cand list 'List the profiles envctl finds, with where each comes from'
            cand show 'Print a profile with `extends` applied, and which file set each key'
            cand check 'Validate profile files; every problem is reported with file:line:column'
            cand new 'Start a team profile in ./envctl/NAME.toml'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'envctl;profiles;list'= {
            cand --color 'When to colour the output (NO_COLOR is honoured with `auto`)'
            cand --json 'Print one JSON document (with `schema_version`) on stdout instead of text'
            cand -q 'Print only data and errors'
            cand --quiet 'Print only data and errors'
            cand -v 'Print more detail on stderr'
            cand --verbose 'Print more detail on stderr'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'envctl;profiles;show'= {
            cand --color 'When to colour the output (NO_COLOR is honoured with `auto`)'
            cand --json 'Print one JSON document (with `schema_version`) on stdout instead of text'
            cand -q 'Print only data and errors'
            cand --quiet 'Print only data and errors'
            cand -v 'Print more detail on stderr'
            cand --verbose 'Print more detail on stderr'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'envctl;profiles;check'= {
            cand --color 'When to colour the output (NO_COLOR is honoured with `auto`)'
            cand --json 'Print one JSON document (with `schema_version`) on stdout instead of text'
            cand -q 'Print only data and errors'
            cand --quiet 'Print only data and errors'
            cand -v 'Print more detail on stderr'
            cand --verbose 'Print more detail on stderr'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'envctl;profiles;new'= {
            cand --from 'Copy this profile (resolved) instead of the starter template'
            cand --directory 'Folder to write into'
            cand --color 'When to colour the output (NO_COLOR is honoured with `auto`)'
            cand --json 'Print one JSON document (with `schema_version`) on stdout instead of text'
            cand -q 'Print only data and errors'
            cand --quiet 'Print only data and errors'
            cand -v 'Print more detail on stderr'
            cand --verbose 'Print more detail on stderr'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'envctl;profiles;help'= {
            cand list 'List the profiles envctl finds, with where each comes from'
            cand show 'Print a profile with `extends` applied, and which file set each key'
            cand check 'Validate profile files; every problem is reported with file:line:column'
            cand new 'Start a team profile in ./envctl/NAME.toml'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'envctl;profiles;help;list'= {
        }
        &'envctl;profiles;help;show'= {
        }
        &'envctl;profiles;help;check'= {
        }
        &'envctl;profiles;help;new'= {
        }
        &'envctl;profiles;help;help'= {
        }
        &'envctl;up'= {
            cand --name 'Container name (default: envctl-PROFILE)'
            cand --pull 'When to pull the image'
            cand -e 'Set an environment variable (KEY=VALUE, or KEY to take it from this shell)'
            cand --env 'Set an environment variable (KEY=VALUE, or KEY to take it from this shell)'
            cand -p 'Publish a port, docker syntax ([IP:]HOST:CONTAINER[/PROTOCOL]); loopback by default'
            cand --publish 'Publish a port, docker syntax ([IP:]HOST:CONTAINER[/PROTOCOL]); loopback by default'
            cand --volume 'Mount SOURCE:TARGET[:ro] (no `-v`: that is --verbose)'
            cand --color 'When to colour the output (NO_COLOR is honoured with `auto`)'
            cand --dry-run 'Print the equivalent `docker run` (with --json: the exact create body) and do nothing'
            cand --force 'Start even when doctor''s checks fail'
            cand --recreate 'Replace the container when the profile changed since it was created'
            cand --locked 'Fail unless envctl.lock pins this profile''s current image'
            cand --check 'Run `nvidia-check` in the container once it started (its exit code is up''s)'
            cand --json 'Print one JSON document (with `schema_version`) on stdout instead of text'
            cand -q 'Print only data and errors'
            cand --quiet 'Print only data and errors'
            cand -v 'Print more detail on stderr'
            cand --verbose 'Print more detail on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'envctl;exec'= {
            cand -u 'Run as this user (name, uid or uid:gid)'
            cand --user 'Run as this user (name, uid or uid:gid)'
            cand -w 'Run in this folder in the container'
            cand --workdir 'Run in this folder in the container'
            cand -e 'Set an environment variable'
            cand --env 'Set an environment variable'
            cand --timeout 'nvidia-check: give up after this many seconds (default 120, at most a day)'
            cand --color 'When to colour the output (NO_COLOR is honoured with `auto`)'
            cand -t 'Allocate a terminal (for interactive programs)'
            cand --tty 'Allocate a terminal (for interactive programs)'
            cand --quick 'nvidia-check: skip the timed matmul and the copy bandwidth'
            cand --json 'Print one JSON document (with `schema_version`) on stdout instead of text'
            cand -q 'Print only data and errors'
            cand --quiet 'Print only data and errors'
            cand -v 'Print more detail on stderr'
            cand --verbose 'Print more detail on stderr'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'envctl;shell'= {
            cand -u 'Run as this user'
            cand --user 'Run as this user'
            cand --color 'When to colour the output (NO_COLOR is honoured with `auto`)'
            cand --json 'Print one JSON document (with `schema_version`) on stdout instead of text'
            cand -q 'Print only data and errors'
            cand --quiet 'Print only data and errors'
            cand -v 'Print more detail on stderr'
            cand --verbose 'Print more detail on stderr'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'envctl;ps'= {
            cand --color 'When to colour the output (NO_COLOR is honoured with `auto`)'
            cand -a 'Include stopped containers'
            cand --all 'Include stopped containers'
            cand --no-trunc 'Show image references and ids whole (pinned digests are cut to 12 hex digits)'
            cand --json 'Print one JSON document (with `schema_version`) on stdout instead of text'
            cand -q 'Print only data and errors'
            cand --quiet 'Print only data and errors'
            cand -v 'Print more detail on stderr'
            cand --verbose 'Print more detail on stderr'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'envctl;down'= {
            cand --timeout 'Seconds to wait for a clean stop before killing (at most 86400)'
            cand --color 'When to colour the output (NO_COLOR is honoured with `auto`)'
            cand --rm 'Also remove the container'
            cand --volumes 'Also remove the named volumes it uses (implies --rm)'
            cand --json 'Print one JSON document (with `schema_version`) on stdout instead of text'
            cand -q 'Print only data and errors'
            cand --quiet 'Print only data and errors'
            cand -v 'Print more detail on stderr'
            cand --verbose 'Print more detail on stderr'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'envctl;logs'= {
            cand --tail 'Only the last N lines'
            cand --color 'When to colour the output (NO_COLOR is honoured with `auto`)'
            cand -f 'Keep printing new output until the container stops'
            cand --follow 'Keep printing new output until the container stops'
            cand --json 'Print one JSON document (with `schema_version`) on stdout instead of text'
            cand -q 'Print only data and errors'
            cand --quiet 'Print only data and errors'
            cand -v 'Print more detail on stderr'
            cand --verbose 'Print more detail on stderr'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'envctl;export'= {
            cand --to 'What to write'
            cand -o 'Write to FILE instead of stdout (atomically; an existing FILE only with --force)'
            cand --output 'Write to FILE instead of stdout (atomically; an existing FILE only with --force)'
            cand --kind 'Kubernetes workload that runs the container [default: job]'
            cand --volumes 'How Kubernetes mounts bind sources: the node''s path, or a PersistentVolumeClaim [default: hostpath]'
            cand --color 'When to colour the output (NO_COLOR is honoured with `auto`)'
            cand --force 'Replace FILE when it exists'
            cand --service 'Also write a Kubernetes Service for the published ports'
            cand --json 'Print one JSON document (with `schema_version`) on stdout instead of text'
            cand -q 'Print only data and errors'
            cand --quiet 'Print only data and errors'
            cand -v 'Print more detail on stderr'
            cand --verbose 'Print more detail on stderr'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'envctl;stats'= {
            cand --interval 'Time between samples: seconds, or with a unit (500ms, 2s, 1m)'
            cand --count 'Stop after N samples'
            cand --record 'Append every sample to FILE: CSV (.csv) or JSON lines (.jsonl)'
            cand --serve 'Serve Prometheus metrics at ADDR [default: 127.0.0.1:9400]'
            cand --color 'When to colour the output (NO_COLOR is honoured with `auto`)'
            cand -a 'Every running container, not only envctl''s'
            cand --all 'Every running container, not only envctl''s'
            cand --once 'One snapshot, then exit'
            cand --json 'Print one JSON document (with `schema_version`) on stdout instead of text'
            cand -q 'Print only data and errors'
            cand --quiet 'Print only data and errors'
            cand -v 'Print more detail on stderr'
            cand --verbose 'Print more detail on stderr'
            cand -h 'Print help'
            cand --help 'Print help'
            cand report 'Draw a recording''s time series: CPU, memory, GPU utilisation, GPU memory, temperature'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'envctl;stats;report'= {
            cand -o 'Where to write the drawing: .svg, or .html with a summary and the diagnoses; `-` writes the SVG to stdout'
            cand --output 'Where to write the drawing: .svg, or .html with a summary and the diagnoses; `-` writes the SVG to stdout'
            cand --color 'When to colour the output (NO_COLOR is honoured with `auto`)'
            cand --force 'Replace OUT when it exists'
            cand --json 'Print one JSON document (with `schema_version`) on stdout instead of text'
            cand -q 'Print only data and errors'
            cand --quiet 'Print only data and errors'
            cand -v 'Print more detail on stderr'
            cand --verbose 'Print more detail on stderr'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'envctl;stats;help'= {
            cand report 'Draw a recording''s time series: CPU, memory, GPU utilisation, GPU memory, temperature'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'envctl;stats;help;report'= {
        }
        &'envctl;stats;help;help'= {
        }
        &'envctl;lock'= {
            cand --color 'When to colour the output (NO_COLOR is honoured with `auto`)'
            cand --update 'Pull again to pick up where each tag points now'
            cand --json 'Print one JSON document (with `schema_version`) on stdout instead of text'
            cand -q 'Print only data and errors'
            cand --quiet 'Print only data and errors'
            cand -v 'Print more detail on stderr'
            cand --verbose 'Print more detail on stderr'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'envctl;outdated'= {
            cand --color 'When to colour the output (NO_COLOR is honoured with `auto`)'
            cand --json 'Print one JSON document (with `schema_version`) on stdout instead of text'
            cand -q 'Print only data and errors'
            cand --quiet 'Print only data and errors'
            cand -v 'Print more detail on stderr'
            cand --verbose 'Print more detail on stderr'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'envctl;completions'= {
            cand --color 'When to colour the output (NO_COLOR is honoured with `auto`)'
            cand --json 'Print one JSON document (with `schema_version`) on stdout instead of text'
            cand -q 'Print only data and errors'
            cand --quiet 'Print only data and errors'
            cand -v 'Print more detail on stderr'
            cand --verbose 'Print more detail on stderr'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'envctl;help'= {
            cand doctor 'Check this host (driver, GPUs, Docker, NVIDIA runtime) and each profile against it'
            cand compat 'The doctor''s verdicts for a host you describe: driver, GPUs, image CUDA and torch'
            cand profiles 'List, show, check and create profiles'
            cand up 'Check, pull, create and start a profile''s container (detached)'
            cand exec 'Run a command in a running container; its exit code is envctl''s'
            cand shell 'Open an interactive shell (bash when the image has it, else sh)'
            cand ps 'List envctl''s containers: profile, image, status, ports, GPUs, drift'
            cand down 'Stop a container (host data is never touched)'
            cand logs 'Print a container''s logs'
            cand export 'The same environment for docker compose, Kubernetes, devcontainers or docker run'
            cand stats 'Container CPU/memory next to GPU utilisation, memory, temperature and power'
            cand lock 'Pin image tags to digests in envctl.lock'
            cand outdated 'Newer tags of the same family, and new digests behind the same tag'
            cand completions 'Print a shell completion script'
            cand help 'Print this message or the help of the given subcommand(s)'
        }
        &'envctl;help;doctor'= {
        }
        &'envctl;help;compat'= {
        }
        &'envctl;help;profiles'= {
            cand list 'List the profiles envctl finds, with where each comes from'
            cand show 'Print a profile with `extends` applied, and which file set each key'
            cand check 'Validate profile files; every problem is reported with file:line:column'
            cand new 'Start a team profile in ./envctl/NAME.toml'
        }
        &'envctl;help;profiles;list'= {
        }
        &'envctl;help;profiles;show'= {
        }
        &'envctl;help;profiles;check'= {
        }
        &'envctl;help;profiles;new'= {
        }
        &'envctl;help;up'= {
        }
        &'envctl;help;exec'= {
        }
        &'envctl;help;shell'= {
        }
        &'envctl;help;ps'= {
        }
        &'envctl;help;down'= {
        }
        &'envctl;help;logs'= {
        }
        &'envctl;help;export'= {
        }
        &'envctl;help;stats'= {
            cand report 'Draw a recording''s time series: CPU, memory, GPU utilisation, GPU memory, temperature'
        }
        &'envctl;help;stats;report'= {
        }
        &'envctl;help;lock'= {
        }
        &'envctl;help;outdated'= {
        }
        &'envctl;help;completions'= {
        }
        &'envctl;help;help'= {
        }
    ]
    $completions[$command]
}
