# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_envctl_global_optspecs
    string join \n json q/quiet v/verbose color= h/help V/version
end

function __fish_envctl_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_envctl_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_envctl_using_subcommand
    set -l cmd (__fish_envctl_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c envctl -n "__fish_envctl_needs_command" -l color -d 'When to colour the output (NO_COLOR is honoured with `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c envctl -n "__fish_envctl_needs_command" -l json -d 'Print one JSON document (with `schema_version`) on stdout instead of text'
complete -c envctl -n "__fish_envctl_needs_command" -s q -l quiet -d 'Print only data and errors'
complete -c envctl -n "__fish_envctl_needs_command" -s v -l verbose -d 'Print more detail on stderr'
complete -c envctl -n "__fish_envctl_needs_command" -s h -l help -d 'Print help'
complete -c envctl -n "__fish_envctl_needs_command" -s V -l version -d 'Print version'
complete -c envctl -n "__fish_envctl_needs_command" -f -a "doctor" -d 'Check this host (driver, GPUs, Docker, NVIDIA runtime) and each profile against it'
complete -c envctl -n "__fish_envctl_needs_command" -f -a "compat" -d 'The doctor\'s verdicts for a host you describe: driver, GPUs, image CUDA and torch'
complete -c envctl -n "__fish_envctl_needs_command" -f -a "profiles" -d 'List, show, check and create profiles'
complete -c envctl -n "__fish_envctl_needs_command" -f -a "up" -d 'Check, pull, create and start a profile\'s container (detached)'
complete -c envctl -n "__fish_envctl_needs_command" -f -a "exec" -d 'Run a command in a running container; its exit code is envctl\'s'
complete -c envctl -n "__fish_envctl_needs_command" -f -a "shell" -d 'Open an interactive shell (bash when the image has it, else sh)'
complete -c envctl -n "__fish_envctl_needs_command" -f -a "ps" -d 'List envctl\'s containers: profile, image, status, ports, GPUs, drift'
complete -c envctl -n "__fish_envctl_needs_command" -f -a "down" -d 'Stop a container (host data is never touched)'
complete -c envctl -n "__fish_envctl_needs_command" -f -a "logs" -d 'Print a container\'s logs'
complete -c envctl -n "__fish_envctl_needs_command" -f -a "export" -d 'The same environment for docker compose, Kubernetes, devcontainers or docker run'
complete -c envctl -n "__fish_envctl_needs_command" -f -a "stats" -d 'Container CPU/memory next to GPU utilisation, memory, temperature and power'
complete -c envctl -n "__fish_envctl_needs_command" -f -a "lock" -d 'Pin image tags to digests in envctl.lock'
complete -c envctl -n "__fish_envctl_needs_command" -f -a "outdated" -d 'Newer tags of the same family, and new digests behind the same tag'
complete -c envctl -n "__fish_envctl_needs_command" -f -a "completions" -d 'Print a shell completion script'
complete -c envctl -n "__fish_envctl_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c envctl -n "__fish_envctl_using_subcommand doctor" -l matrix -d 'A compatibility matrix file whose rows add to or replace the bundled ones' -r -F
complete -c envctl -n "__fish_envctl_using_subcommand doctor" -l color -d 'When to colour the output (NO_COLOR is honoured with `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c envctl -n "__fish_envctl_using_subcommand doctor" -l strict -d 'Treat warnings as failures (exit 1)'
complete -c envctl -n "__fish_envctl_using_subcommand doctor" -l matrix-info -d 'Print the matrix\'s date, row counts and sources, and exit'
complete -c envctl -n "__fish_envctl_using_subcommand doctor" -l json -d 'Print one JSON document (with `schema_version`) on stdout instead of text'
complete -c envctl -n "__fish_envctl_using_subcommand doctor" -s q -l quiet -d 'Print only data and errors'
complete -c envctl -n "__fish_envctl_using_subcommand doctor" -s v -l verbose -d 'Print more detail on stderr'
complete -c envctl -n "__fish_envctl_using_subcommand doctor" -s h -l help -d 'Print help'
complete -c envctl -n "__fish_envctl_using_subcommand compat" -l profile -d 'Take CUDA and torch from this profile\'s [stack]' -r
complete -c envctl -n "__fish_envctl_using_subcommand compat" -l image-cuda -d 'The image\'s CUDA release, e.g. 12.8 (default: the CUDA of --torch\'s +cuXYZ)' -r
complete -c envctl -n "__fish_envctl_using_subcommand compat" -l torch -d 'The image\'s torch build, e.g. 2.8.0+cu128 (+cu128 names CUDA 12.8)' -r
complete -c envctl -n "__fish_envctl_using_subcommand compat" -l driver -d 'The host\'s NVIDIA driver, e.g. 550.54.15' -r
complete -c envctl -n "__fish_envctl_using_subcommand compat" -l gpu -d 'A GPU model as NVML or nvidia-smi names it (repeat for mixed hosts)' -r
complete -c envctl -n "__fish_envctl_using_subcommand compat" -l cc -d 'A GPU by compute capability, e.g. 8.9 (repeat for mixed hosts)' -r
complete -c envctl -n "__fish_envctl_using_subcommand compat" -l matrix -d 'A compatibility matrix file whose rows add to or replace the bundled ones' -r -F
complete -c envctl -n "__fish_envctl_using_subcommand compat" -l color -d 'When to colour the output (NO_COLOR is honoured with `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c envctl -n "__fish_envctl_using_subcommand compat" -l datacenter -d 'The GPUs are data-center parts (H100, A100, … are known by name): below a CUDA major\'s driver floor, the verdict says what cuda-compat forward compatibility offers'
complete -c envctl -n "__fish_envctl_using_subcommand compat" -l json -d 'Print one JSON document (with `schema_version`) on stdout instead of text'
complete -c envctl -n "__fish_envctl_using_subcommand compat" -s q -l quiet -d 'Print only data and errors'
complete -c envctl -n "__fish_envctl_using_subcommand compat" -s v -l verbose -d 'Print more detail on stderr'
complete -c envctl -n "__fish_envctl_using_subcommand compat" -s h -l help -d 'Print help'
complete -c envctl -n "__fish_envctl_using_subcommand profiles; and not __fish_seen_subcommand_from list show check new help" -l color -d 'When to colour the output (NO_COLOR is honoured with `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c envctl -n "__fish_envctl_using_subcommand profiles; and not __fish_seen_subcommand_from list show check new help" -l json -d 'Print one JSON document (with `schema_version`) on stdout instead of text'
complete -c envctl -n "__fish_envctl_using_subcommand profiles; and not __fish_seen_subcommand_from list show check new help" -s q -l quiet -d 'Print only data and errors'
complete -c envctl -n "__fish_envctl_using_subcommand profiles; and not __fish_seen_subcommand_from list show check new help" -s v -l verbose -d 'Print more detail on stderr'
complete -c envctl -n "__fish_envctl_using_subcommand profiles; and not __fish_seen_subcommand_from list show check new help" -s h -l help -d 'Print help'
complete -c envctl -n "__fish_envctl_using_subcommand profiles; and not __fish_seen_subcommand_from list show check new help" -f -a "list" -d 'List the profiles envctl finds, with where each comes from'
complete -c envctl -n "__fish_envctl_using_subcommand profiles; and not __fish_seen_subcommand_from list show check new help" -f -a "show" -d 'Print a profile with `extends` applied, and which file set each key'
complete -c envctl -n "__fish_envctl_using_subcommand profiles; and not __fish_seen_subcommand_from list show check new help" -f -a "check" -d 'Validate profile files; every problem is reported with file:line:column'
complete -c envctl -n "__fish_envctl_using_subcommand profiles; and not __fish_seen_subcommand_from list show check new help" -f -a "new" -d 'Start a team profile in ./envctl/NAME.toml'
complete -c envctl -n "__fish_envctl_using_subcommand profiles; and not __fish_seen_subcommand_from list show check new help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c envctl -n "__fish_envctl_using_subcommand profiles; and __fish_seen_subcommand_from list" -l color -d 'When to colour the output (NO_COLOR is honoured with `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c envctl -n "__fish_envctl_using_subcommand profiles; and __fish_seen_subcommand_from list" -l json -d 'Print one JSON document (with `schema_version`) on stdout instead of text'
complete -c envctl -n "__fish_envctl_using_subcommand profiles; and __fish_seen_subcommand_from list" -s q -l quiet -d 'Print only data and errors'
complete -c envctl -n "__fish_envctl_using_subcommand profiles; and __fish_seen_subcommand_from list" -s v -l verbose -d 'Print more detail on stderr'
complete -c envctl -n "__fish_envctl_using_subcommand profiles; and __fish_seen_subcommand_from list" -s h -l help -d 'Print help'
complete -c envctl -n "__fish_envctl_using_subcommand profiles; and __fish_seen_subcommand_from show" -l color -d 'When to colour the output (NO_COLOR is honoured with `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c envctl -n "__fish_envctl_using_subcommand profiles; and __fish_seen_subcommand_from show" -l json -d 'Print one JSON document (with `schema_version`) on stdout instead of text'
complete -c envctl -n "__fish_envctl_using_subcommand profiles; and __fish_seen_subcommand_from show" -s q -l quiet -d 'Print only data and errors'
complete -c envctl -n "__fish_envctl_using_subcommand profiles; and __fish_seen_subcommand_from show" -s v -l verbose -d 'Print more detail on stderr'
complete -c envctl -n "__fish_envctl_using_subcommand profiles; and __fish_seen_subcommand_from show" -s h -l help -d 'Print help'
complete -c envctl -n "__fish_envctl_using_subcommand profiles; and __fish_seen_subcommand_from check" -l color -d 'When to colour the output (NO_COLOR is honoured with `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c envctl -n "__fish_envctl_using_subcommand profiles; and __fish_seen_subcommand_from check" -l json -d 'Print one JSON document (with `schema_version`) on stdout instead of text'
complete -c envctl -n "__fish_envctl_using_subcommand profiles; and __fish_seen_subcommand_from check" -s q -l quiet -d 'Print only data and errors'
complete -c envctl -n "__fish_envctl_using_subcommand profiles; and __fish_seen_subcommand_from check" -s v -l verbose -d 'Print more detail on stderr'
complete -c envctl -n "__fish_envctl_using_subcommand profiles; and __fish_seen_subcommand_from check" -s h -l help -d 'Print help'
complete -c envctl -n "__fish_envctl_using_subcommand profiles; and __fish_seen_subcommand_from new" -l from -d 'Copy this profile (resolved) instead of the starter template' -r
complete -c envctl -n "__fish_envctl_using_subcommand profiles; and __fish_seen_subcommand_from new" -l directory -d 'Folder to write into' -r -F
complete -c envctl -n "__fish_envctl_using_subcommand profiles; and __fish_seen_subcommand_from new" -l color -d 'When to colour the output (NO_COLOR is honoured with `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c envctl -n "__fish_envctl_using_subcommand profiles; and __fish_seen_subcommand_from new" -l json -d 'Print one JSON document (with `schema_version`) on stdout instead of text'
complete -c envctl -n "__fish_envctl_using_subcommand profiles; and __fish_seen_subcommand_from new" -s q -l quiet -d 'Print only data and errors'
complete -c envctl -n "__fish_envctl_using_subcommand profiles; and __fish_seen_subcommand_from new" -s v -l verbose -d 'Print more detail on stderr'
complete -c envctl -n "__fish_envctl_using_subcommand profiles; and __fish_seen_subcommand_from new" -s h -l help -d 'Print help'
complete -c envctl -n "__fish_envctl_using_subcommand profiles; and __fish_seen_subcommand_from help" -f -a "list" -d 'List the profiles envctl finds, with where each comes from'
complete -c envctl -n "__fish_envctl_using_subcommand profiles; and __fish_seen_subcommand_from help" -f -a "show" -d 'Print a profile with `extends` applied, and which file set each key'
complete -c envctl -n "__fish_envctl_using_subcommand profiles; and __fish_seen_subcommand_from help" -f -a "check" -d 'Validate profile files; every problem is reported with file:line:column'
complete -c envctl -n "__fish_envctl_using_subcommand profiles; and __fish_seen_subcommand_from help" -f -a "new" -d 'Start a team profile in ./envctl/NAME.toml'
complete -c envctl -n "__fish_envctl_using_subcommand profiles; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c envctl -n "__fish_envctl_using_subcommand up" -l name -d 'Container name (default: envctl-PROFILE)' -r
complete -c envctl -n "__fish_envctl_using_subcommand up" -l pull -d 'When to pull the image' -r -f -a "missing\t'Only when it is not present locally'
always\t'Every time, to pick up a moved tag'
never\t'Never; fail when it is missing'"
complete -c envctl -n "__fish_envctl_using_subcommand up" -s e -l env -d 'Set an environment variable (KEY=VALUE, or KEY to take it from this shell)' -r
complete -c envctl -n "__fish_envctl_using_subcommand up" -s p -l publish -d 'Publish a port, docker syntax ([IP:]HOST:CONTAINER[/PROTOCOL]); loopback by default' -r
complete -c envctl -n "__fish_envctl_using_subcommand up" -l volume -d 'Mount SOURCE:TARGET[:ro] (no `-v`: that is --verbose)' -r
complete -c envctl -n "__fish_envctl_using_subcommand up" -l color -d 'When to colour the output (NO_COLOR is honoured with `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c envctl -n "__fish_envctl_using_subcommand up" -l dry-run -d 'Print the equivalent `docker run` (with --json: the exact create body) and do nothing'
complete -c envctl -n "__fish_envctl_using_subcommand up" -l force -d 'Start even when doctor\'s checks fail'
complete -c envctl -n "__fish_envctl_using_subcommand up" -l recreate -d 'Replace the container when the profile changed since it was created'
complete -c envctl -n "__fish_envctl_using_subcommand up" -l locked -d 'Fail unless envctl.lock pins this profile\'s current image'
complete -c envctl -n "__fish_envctl_using_subcommand up" -l check -d 'Run `nvidia-check` in the container once it started (its exit code is up\'s)'
complete -c envctl -n "__fish_envctl_using_subcommand up" -l json -d 'Print one JSON document (with `schema_version`) on stdout instead of text'
complete -c envctl -n "__fish_envctl_using_subcommand up" -s q -l quiet -d 'Print only data and errors'
complete -c envctl -n "__fish_envctl_using_subcommand up" -s v -l verbose -d 'Print more detail on stderr'
complete -c envctl -n "__fish_envctl_using_subcommand up" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c envctl -n "__fish_envctl_using_subcommand exec" -s u -l user -d 'Run as this user (name, uid or uid:gid)' -r
complete -c envctl -n "__fish_envctl_using_subcommand exec" -s w -l workdir -d 'Run in this folder in the container' -r
complete -c envctl -n "__fish_envctl_using_subcommand exec" -s e -l env -d 'Set an environment variable' -r
complete -c envctl -n "__fish_envctl_using_subcommand exec" -l timeout -d 'nvidia-check: give up after this many seconds (default 120, at most a day)' -r
complete -c envctl -n "__fish_envctl_using_subcommand exec" -l color -d 'When to colour the output (NO_COLOR is honoured with `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c envctl -n "__fish_envctl_using_subcommand exec" -s t -l tty -d 'Allocate a terminal (for interactive programs)'
complete -c envctl -n "__fish_envctl_using_subcommand exec" -l quick -d 'nvidia-check: skip the timed matmul and the copy bandwidth'
complete -c envctl -n "__fish_envctl_using_subcommand exec" -l json -d 'Print one JSON document (with `schema_version`) on stdout instead of text'
complete -c envctl -n "__fish_envctl_using_subcommand exec" -s q -l quiet -d 'Print only data and errors'
complete -c envctl -n "__fish_envctl_using_subcommand exec" -s v -l verbose -d 'Print more detail on stderr'
complete -c envctl -n "__fish_envctl_using_subcommand exec" -s h -l help -d 'Print help'
complete -c envctl -n "__fish_envctl_using_subcommand shell" -s u -l user -d 'Run as this user' -r
complete -c envctl -n "__fish_envctl_using_subcommand shell" -l color -d 'When to colour the output (NO_COLOR is honoured with `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c envctl -n "__fish_envctl_using_subcommand shell" -l json -d 'Print one JSON document (with `schema_version`) on stdout instead of text'
complete -c envctl -n "__fish_envctl_using_subcommand shell" -s q -l quiet -d 'Print only data and errors'
complete -c envctl -n "__fish_envctl_using_subcommand shell" -s v -l verbose -d 'Print more detail on stderr'
complete -c envctl -n "__fish_envctl_using_subcommand shell" -s h -l help -d 'Print help'
complete -c envctl -n "__fish_envctl_using_subcommand ps" -l color -d 'When to colour the output (NO_COLOR is honoured with `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c envctl -n "__fish_envctl_using_subcommand ps" -s a -l all -d 'Include stopped containers'
complete -c envctl -n "__fish_envctl_using_subcommand ps" -l no-trunc -d 'Show image references and ids whole (pinned digests are cut to 12 hex digits)'
complete -c envctl -n "__fish_envctl_using_subcommand ps" -l json -d 'Print one JSON document (with `schema_version`) on stdout instead of text'
complete -c envctl -n "__fish_envctl_using_subcommand ps" -s q -l quiet -d 'Print only data and errors'
complete -c envctl -n "__fish_envctl_using_subcommand ps" -s v -l verbose -d 'Print more detail on stderr'
complete -c envctl -n "__fish_envctl_using_subcommand ps" -s h -l help -d 'Print help'
complete -c envctl -n "__fish_envctl_using_subcommand down" -l timeout -d 'Seconds to wait for a clean stop before killing (at most 86400)' -r
complete -c envctl -n "__fish_envctl_using_subcommand down" -l color -d 'When to colour the output (NO_COLOR is honoured with `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c envctl -n "__fish_envctl_using_subcommand down" -l rm -d 'Also remove the container'
complete -c envctl -n "__fish_envctl_using_subcommand down" -l volumes -d 'Also remove the named volumes it uses (implies --rm)'
complete -c envctl -n "__fish_envctl_using_subcommand down" -l json -d 'Print one JSON document (with `schema_version`) on stdout instead of text'
complete -c envctl -n "__fish_envctl_using_subcommand down" -s q -l quiet -d 'Print only data and errors'
complete -c envctl -n "__fish_envctl_using_subcommand down" -s v -l verbose -d 'Print more detail on stderr'
complete -c envctl -n "__fish_envctl_using_subcommand down" -s h -l help -d 'Print help'
complete -c envctl -n "__fish_envctl_using_subcommand logs" -l tail -d 'Only the last N lines' -r
complete -c envctl -n "__fish_envctl_using_subcommand logs" -l color -d 'When to colour the output (NO_COLOR is honoured with `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c envctl -n "__fish_envctl_using_subcommand logs" -s f -l follow -d 'Keep printing new output until the container stops'
complete -c envctl -n "__fish_envctl_using_subcommand logs" -l json -d 'Print one JSON document (with `schema_version`) on stdout instead of text'
complete -c envctl -n "__fish_envctl_using_subcommand logs" -s q -l quiet -d 'Print only data and errors'
complete -c envctl -n "__fish_envctl_using_subcommand logs" -s v -l verbose -d 'Print more detail on stderr'
complete -c envctl -n "__fish_envctl_using_subcommand logs" -s h -l help -d 'Print help'
complete -c envctl -n "__fish_envctl_using_subcommand export" -l to -d 'What to write' -r -f -a "compose\t'A compose file (`docker compose up`)'
k8s\t'Kubernetes manifests (`kubectl apply -f`)'
devcontainer\t'A devcontainer.json'
docker-run\t'The `docker run` line (as `up --dry-run`)'"
complete -c envctl -n "__fish_envctl_using_subcommand export" -s o -l output -d 'Write to FILE instead of stdout (atomically; an existing FILE only with --force)' -r -F
complete -c envctl -n "__fish_envctl_using_subcommand export" -l kind -d 'Kubernetes workload that runs the container [default: job]' -r -f -a "pod\t''
job\t''
deployment\t''"
complete -c envctl -n "__fish_envctl_using_subcommand export" -l volumes -d 'How Kubernetes mounts bind sources: the node\'s path, or a PersistentVolumeClaim [default: hostpath]' -r -f -a "hostpath\t''
pvc\t''"
complete -c envctl -n "__fish_envctl_using_subcommand export" -l color -d 'When to colour the output (NO_COLOR is honoured with `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c envctl -n "__fish_envctl_using_subcommand export" -l force -d 'Replace FILE when it exists'
complete -c envctl -n "__fish_envctl_using_subcommand export" -l service -d 'Also write a Kubernetes Service for the published ports'
complete -c envctl -n "__fish_envctl_using_subcommand export" -l json -d 'Print one JSON document (with `schema_version`) on stdout instead of text'
complete -c envctl -n "__fish_envctl_using_subcommand export" -s q -l quiet -d 'Print only data and errors'
complete -c envctl -n "__fish_envctl_using_subcommand export" -s v -l verbose -d 'Print more detail on stderr'
complete -c envctl -n "__fish_envctl_using_subcommand export" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c envctl -n "__fish_envctl_using_subcommand stats; and not __fish_seen_subcommand_from report help" -l interval -d 'Time between samples: seconds, or with a unit (500ms, 2s, 1m)' -r
complete -c envctl -n "__fish_envctl_using_subcommand stats; and not __fish_seen_subcommand_from report help" -l count -d 'Stop after N samples' -r
complete -c envctl -n "__fish_envctl_using_subcommand stats; and not __fish_seen_subcommand_from report help" -l record -d 'Append every sample to FILE: CSV (.csv) or JSON lines (.jsonl)' -r -F
complete -c envctl -n "__fish_envctl_using_subcommand stats; and not __fish_seen_subcommand_from report help" -l serve -d 'Serve Prometheus metrics at ADDR [default: 127.0.0.1:9400]' -r
complete -c envctl -n "__fish_envctl_using_subcommand stats; and not __fish_seen_subcommand_from report help" -l color -d 'When to colour the output (NO_COLOR is honoured with `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c envctl -n "__fish_envctl_using_subcommand stats; and not __fish_seen_subcommand_from report help" -s a -l all -d 'Every running container, not only envctl\'s'
complete -c envctl -n "__fish_envctl_using_subcommand stats; and not __fish_seen_subcommand_from report help" -l once -d 'One snapshot, then exit'
complete -c envctl -n "__fish_envctl_using_subcommand stats; and not __fish_seen_subcommand_from report help" -l json -d 'Print one JSON document (with `schema_version`) on stdout instead of text'
complete -c envctl -n "__fish_envctl_using_subcommand stats; and not __fish_seen_subcommand_from report help" -s q -l quiet -d 'Print only data and errors'
complete -c envctl -n "__fish_envctl_using_subcommand stats; and not __fish_seen_subcommand_from report help" -s v -l verbose -d 'Print more detail on stderr'
complete -c envctl -n "__fish_envctl_using_subcommand stats; and not __fish_seen_subcommand_from report help" -s h -l help -d 'Print help'
complete -c envctl -n "__fish_envctl_using_subcommand stats; and not __fish_seen_subcommand_from report help" -a "report" -d 'Draw a recording\'s time series: CPU, memory, GPU utilisation, GPU memory, temperature'
complete -c envctl -n "__fish_envctl_using_subcommand stats; and not __fish_seen_subcommand_from report help" -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c envctl -n "__fish_envctl_using_subcommand stats; and __fish_seen_subcommand_from report" -s o -l output -d 'Where to write the drawing: .svg, or .html with a summary and the diagnoses; `-` writes the SVG to stdout' -r -F
complete -c envctl -n "__fish_envctl_using_subcommand stats; and __fish_seen_subcommand_from report" -l color -d 'When to colour the output (NO_COLOR is honoured with `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c envctl -n "__fish_envctl_using_subcommand stats; and __fish_seen_subcommand_from report" -l force -d 'Replace OUT when it exists'
complete -c envctl -n "__fish_envctl_using_subcommand stats; and __fish_seen_subcommand_from report" -l json -d 'Print one JSON document (with `schema_version`) on stdout instead of text'
complete -c envctl -n "__fish_envctl_using_subcommand stats; and __fish_seen_subcommand_from report" -s q -l quiet -d 'Print only data and errors'
complete -c envctl -n "__fish_envctl_using_subcommand stats; and __fish_seen_subcommand_from report" -s v -l verbose -d 'Print more detail on stderr'
complete -c envctl -n "__fish_envctl_using_subcommand stats; and __fish_seen_subcommand_from report" -s h -l help -d 'Print help'
complete -c envctl -n "__fish_envctl_using_subcommand stats; and __fish_seen_subcommand_from help" -f -a "report" -d 'Draw a recording\'s time series: CPU, memory, GPU utilisation, GPU memory, temperature'
complete -c envctl -n "__fish_envctl_using_subcommand stats; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c envctl -n "__fish_envctl_using_subcommand lock" -l color -d 'When to colour the output (NO_COLOR is honoured with `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c envctl -n "__fish_envctl_using_subcommand lock" -l update -d 'Pull again to pick up where each tag points now'
complete -c envctl -n "__fish_envctl_using_subcommand lock" -l json -d 'Print one JSON document (with `schema_version`) on stdout instead of text'
complete -c envctl -n "__fish_envctl_using_subcommand lock" -s q -l quiet -d 'Print only data and errors'
complete -c envctl -n "__fish_envctl_using_subcommand lock" -s v -l verbose -d 'Print more detail on stderr'
complete -c envctl -n "__fish_envctl_using_subcommand lock" -s h -l help -d 'Print help'
complete -c envctl -n "__fish_envctl_using_subcommand outdated" -l color -d 'When to colour the output (NO_COLOR is honoured with `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c envctl -n "__fish_envctl_using_subcommand outdated" -l json -d 'Print one JSON document (with `schema_version`) on stdout instead of text'
complete -c envctl -n "__fish_envctl_using_subcommand outdated" -s q -l quiet -d 'Print only data and errors'
complete -c envctl -n "__fish_envctl_using_subcommand outdated" -s v -l verbose -d 'Print more detail on stderr'
complete -c envctl -n "__fish_envctl_using_subcommand outdated" -s h -l help -d 'Print help'
complete -c envctl -n "__fish_envctl_using_subcommand completions" -l color -d 'When to colour the output (NO_COLOR is honoured with `auto`)' -r -f -a "auto\t''
always\t''
never\t''"
complete -c envctl -n "__fish_envctl_using_subcommand completions" -l json -d 'Print one JSON document (with `schema_version`) on stdout instead of text'
complete -c envctl -n "__fish_envctl_using_subcommand completions" -s q -l quiet -d 'Print only data and errors'
complete -c envctl -n "__fish_envctl_using_subcommand completions" -s v -l verbose -d 'Print more detail on stderr'
complete -c envctl -n "__fish_envctl_using_subcommand completions" -s h -l help -d 'Print help'
complete -c envctl -n "__fish_envctl_using_subcommand help; and not __fish_seen_subcommand_from doctor compat profiles up exec shell ps down logs export stats lock outdated completions help" -f -a "doctor" -d 'Check this host (driver, GPUs, Docker, NVIDIA runtime) and each profile against it'
complete -c envctl -n "__fish_envctl_using_subcommand help; and not __fish_seen_subcommand_from doctor compat profiles up exec shell ps down logs export stats lock outdated completions help" -f -a "compat" -d 'The doctor\'s verdicts for a host you describe: driver, GPUs, image CUDA and torch'
complete -c envctl -n "__fish_envctl_using_subcommand help; and not __fish_seen_subcommand_from doctor compat profiles up exec shell ps down logs export stats lock outdated completions help" -f -a "profiles" -d 'List, show, check and create profiles'
complete -c envctl -n "__fish_envctl_using_subcommand help; and not __fish_seen_subcommand_from doctor compat profiles up exec shell ps down logs export stats lock outdated completions help" -f -a "up" -d 'Check, pull, create and start a profile\'s container (detached)'
complete -c envctl -n "__fish_envctl_using_subcommand help; and not __fish_seen_subcommand_from doctor compat profiles up exec shell ps down logs export stats lock outdated completions help" -f -a "exec" -d 'Run a command in a running container; its exit code is envctl\'s'
complete -c envctl -n "__fish_envctl_using_subcommand help; and not __fish_seen_subcommand_from doctor compat profiles up exec shell ps down logs export stats lock outdated completions help" -f -a "shell" -d 'Open an interactive shell (bash when the image has it, else sh)'
complete -c envctl -n "__fish_envctl_using_subcommand help; and not __fish_seen_subcommand_from doctor compat profiles up exec shell ps down logs export stats lock outdated completions help" -f -a "ps" -d 'List envctl\'s containers: profile, image, status, ports, GPUs, drift'
complete -c envctl -n "__fish_envctl_using_subcommand help; and not __fish_seen_subcommand_from doctor compat profiles up exec shell ps down logs export stats lock outdated completions help" -f -a "down" -d 'Stop a container (host data is never touched)'
complete -c envctl -n "__fish_envctl_using_subcommand help; and not __fish_seen_subcommand_from doctor compat profiles up exec shell ps down logs export stats lock outdated completions help" -f -a "logs" -d 'Print a container\'s logs'
complete -c envctl -n "__fish_envctl_using_subcommand help; and not __fish_seen_subcommand_from doctor compat profiles up exec shell ps down logs export stats lock outdated completions help" -f -a "export" -d 'The same environment for docker compose, Kubernetes, devcontainers or docker run'
complete -c envctl -n "__fish_envctl_using_subcommand help; and not __fish_seen_subcommand_from doctor compat profiles up exec shell ps down logs export stats lock outdated completions help" -f -a "stats" -d 'Container CPU/memory next to GPU utilisation, memory, temperature and power'
complete -c envctl -n "__fish_envctl_using_subcommand help; and not __fish_seen_subcommand_from doctor compat profiles up exec shell ps down logs export stats lock outdated completions help" -f -a "lock" -d 'Pin image tags to digests in envctl.lock'
complete -c envctl -n "__fish_envctl_using_subcommand help; and not __fish_seen_subcommand_from doctor compat profiles up exec shell ps down logs export stats lock outdated completions help" -f -a "outdated" -d 'Newer tags of the same family, and new digests behind the same tag'
complete -c envctl -n "__fish_envctl_using_subcommand help; and not __fish_seen_subcommand_from doctor compat profiles up exec shell ps down logs export stats lock outdated completions help" -f -a "completions" -d 'Print a shell completion script'
complete -c envctl -n "__fish_envctl_using_subcommand help; and not __fish_seen_subcommand_from doctor compat profiles up exec shell ps down logs export stats lock outdated completions help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c envctl -n "__fish_envctl_using_subcommand help; and __fish_seen_subcommand_from profiles" -f -a "list" -d 'List the profiles envctl finds, with where each comes from'
complete -c envctl -n "__fish_envctl_using_subcommand help; and __fish_seen_subcommand_from profiles" -f -a "show" -d 'Print a profile with `extends` applied, and which file set each key'
complete -c envctl -n "__fish_envctl_using_subcommand help; and __fish_seen_subcommand_from profiles" -f -a "check" -d 'Validate profile files; every problem is reported with file:line:column'
complete -c envctl -n "__fish_envctl_using_subcommand help; and __fish_seen_subcommand_from profiles" -f -a "new" -d 'Start a team profile in ./envctl/NAME.toml'
complete -c envctl -n "__fish_envctl_using_subcommand help; and __fish_seen_subcommand_from stats" -f -a "report" -d 'Draw a recording\'s time series: CPU, memory, GPU utilisation, GPU memory, temperature'
