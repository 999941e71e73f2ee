# envctl nvidia-check, the shell half. POSIX sh: busybox ash, dash and bash all run it.
#
# envctl runs it through the Engine API's exec, nothing mounted:
#   sh -c "$THIS" envctl-nvidia-check PYTHON_SOURCE SECONDS QUICK
# It gathers what needs no Python (device files, nvidia-smi, /dev/shm, ulimits, the GPU
# environment variables) and prints it at once as one JSON object after a marker line, so
# envctl has it even when the Python half later runs out of time. Then it runs the Python
# half (nvidia_check.py) with the image's python3 or python under a watchdog, with its output
# in files so that a process it leaves behind cannot hold the exec's streams open, and
# prints how that went and what it printed, each after its own marker. Nothing may stop
# the report: a command that fails or is missing is itself a fact.

python_source=$1
budget=${2:-120}
quick=${3:-0}
case $budget in '' | *[!0-9]*) budget=120 ;; esac

MARK_SHELL='@@envctl-nvidia-check:shell@@'
MARK_PYTHON_RUN='@@envctl-nvidia-check:python-run@@'
MARK_PYTHON_OUTPUT='@@envctl-nvidia-check:python-output@@'
MARK_END='@@envctl-nvidia-check:end@@'

umask 077

have() { command -v "$1" >/dev/null 2>&1; }

start=$(date +%s 2>/dev/null)
case $start in '' | *[!0-9]*) start= ;; esac

# Whole seconds since the start; 0 when `date +%s` cannot tell.
elapsed() {
	if [ -z "$start" ]; then
		echo 0
		return
	fi
	_now=$(date +%s 2>/dev/null)
	case $_now in
	'' | *[!0-9]*) echo 0 ;;
	*) echo $((_now - start)) ;;
	esac
}

if have sed && have tr; then can_escape=true; else can_escape=false; fi

# Standard input as a JSON string, quotes included: control characters other than tab and
# newline dropped, backslash, quote, tab and newline escaped. `null` without sed and tr.
json_text() {
	if [ "$can_escape" = true ]; then
		printf '"%s"' "$(tr -d '\000-\010\013-\037' | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/	/\\t/g' | sed -e ':a' -e 'N' -e '$!ba' -e 's/\n/\\n/g')"
	else
		cat >/dev/null
		printf 'null'
	fi
}

json_value() { printf '%s' "$1" | json_text; }

# A file's first 64 KiB as a JSON string; null when there is no such file.
json_file() {
	if [ ! -f "$1" ]; then
		printf 'null'
	elif have head; then
		head -c 65536 "$1" | json_text
	else
		json_text <"$1"
	fi
}

json_number() {
	case $1 in
	'' | *[!0-9-]*) printf 'null' ;;
	*) printf '%s' "$1" ;;
	esac
}

# A private folder for the output of the commands run under the watchdog.
work=
for base in "${TMPDIR:-/tmp}" /tmp /dev/shm /var/tmp "${HOME:-/root}"; do
	candidate="$base/envctl-nvidia-check.$$.${start:-0}"
	if [ -d "$base" ] && mkdir "$candidate" 2>/dev/null; then
		work=$candidate
		break
	fi
done
if [ -n "$work" ]; then
	trap 'rm -rf "$work"' EXIT
fi

# run_limited SECONDS NAME COMMAND…: runs COMMAND with stdout in $work/NAME.out and stderr
# in $work/NAME.err, killed after SECONDS. Sets last_status and last_timed_out (the
# watchdog leaves a file before it kills: a status of 137 alone could be the OOM killer).
# The watchdog sleeps in steps of one second, so killing it leaves no long sleep behind.
run_limited() {
	_seconds=$1
	_name=$2
	shift 2
	last_timed_out=false
	"$@" >"$work/$_name.out" 2>"$work/$_name.err" </dev/null &
	_pid=$!
	(
		_waited=0
		while [ "$_waited" -lt "$_seconds" ]; do
			sleep 1
			_waited=$((_waited + 1))
		done
		: >"$work/$_name.killed"
		kill -9 "$_pid"
	) >/dev/null 2>&1 </dev/null &
	_watchdog=$!
	wait "$_pid"
	last_status=$?
	kill "$_watchdog" 2>/dev/null
	wait "$_watchdog" 2>/dev/null
	if [ -f "$work/$_name.killed" ]; then
		last_timed_out=true
		rm -f "$work/$_name.killed"
	fi
}

# nvidia-smi: one CSV line per GPU. `compute_cap` exists from R510 on; older drivers get
# the query without it.
smi_path=$(command -v nvidia-smi 2>/dev/null)
smi_query=index,name,driver_version,uuid,pci.bus_id,memory.total,compute_cap
smi_limit=$((budget / 4))
[ "$smi_limit" -gt 20 ] && smi_limit=20
[ "$smi_limit" -lt 1 ] && smi_limit=1
smi_status=
smi_timed_out=false
smi_stdout=
smi_stderr=
if [ -n "$smi_path" ]; then
	if [ -n "$work" ]; then
		run_limited "$smi_limit" smi nvidia-smi --query-gpu="$smi_query" --format=csv,noheader,nounits
		if [ "$last_status" != 0 ] && [ "$last_timed_out" = false ]; then
			case "$(cat "$work/smi.out" "$work/smi.err" 2>/dev/null)" in
			*compute_cap*)
				smi_query=index,name,driver_version,uuid,pci.bus_id,memory.total
				run_limited "$smi_limit" smi nvidia-smi --query-gpu="$smi_query" --format=csv,noheader,nounits
				;;
			esac
		fi
		smi_status=$last_status
		smi_timed_out=$last_timed_out
	else
		smi_stdout=$(nvidia-smi --query-gpu="$smi_query" --format=csv,noheader,nounits 2>&1)
		smi_status=$?
	fi
fi

shm_output=$(df -P -k /dev/shm 2>&1)
shm_status=$?

printf '%s\n' "$MARK_SHELL"
printf '{"schema_version":1'
printf ',"escaped":%s' "$can_escape"
printf ',"user":%s' "$(id 2>/dev/null | json_text)"
printf ',"devices":['
separator=
for device in /dev/nvidia*; do
	[ -e "$device" ] || continue
	if [ -c "$device" ]; then
		kind=character
	elif [ -d "$device" ]; then
		kind=directory
	else
		kind=other
	fi
	printf '%s{"name":%s,"kind":"%s"}' "$separator" "$(json_value "${device#/dev/}")" "$kind"
	separator=,
done
printf ']'
if [ -z "$smi_path" ]; then
	printf ',"nvidia_smi":null'
else
	if [ -n "$work" ]; then
		smi_stdout_json=$(json_file "$work/smi.out")
		smi_stderr_json=$(json_file "$work/smi.err")
	else
		smi_stdout_json=$(json_value "$smi_stdout")
		smi_stderr_json=$(json_value "$smi_stderr")
	fi
	printf ',"nvidia_smi":{"path":%s,"query":"%s","exit_status":%s,"timed_out":%s,"limit_seconds":%s,"stdout":%s,"stderr":%s}' \
		"$(json_value "$smi_path")" "$smi_query" "$(json_number "$smi_status")" "$smi_timed_out" "$smi_limit" \
		"$smi_stdout_json" "$smi_stderr_json"
fi
printf ',"shm":{"exit_status":%s,"output":%s}' "$shm_status" "$(json_value "$shm_output")"
printf ',"ulimits":{"memlock":%s,"stack":%s}' "$(ulimit -l 2>&1 | json_text)" "$(ulimit -s 2>&1 | json_text)"
printf ',"environment":{'
separator=
for name in NVIDIA_VISIBLE_DEVICES CUDA_VISIBLE_DEVICES CUDA_DEVICE_ORDER NVIDIA_DRIVER_CAPABILITIES NVIDIA_REQUIRE_CUDA CUDA_VERSION NCCL_VERSION; do
	eval "is_set=\${$name+set}"
	if [ "$is_set" = set ]; then
		eval "value=\$$name"
		printf '%s"%s":%s' "$separator" "$name" "$(json_value "$value")"
	else
		printf '%s"%s":null' "$separator" "$name"
	fi
	separator=,
done
printf '}'
python_path=$(command -v python3 2>/dev/null) || python_path=$(command -v python 2>/dev/null) || python_path=
printf ',"python":%s' "$(if [ -n "$python_path" ]; then json_value "$python_path"; else printf 'null'; fi)"
printf ',"temporary_directory":%s' "$(if [ -n "$work" ]; then json_value "$work"; else printf 'null'; fi)"
printf ',"elapsed_seconds":%s}\n' "$(elapsed)"

if [ -z "$python_path" ]; then
	printf '%s\n{"path":null}\n%s\n' "$MARK_PYTHON_RUN" "$MARK_END"
	exit 0
fi

# What is left of the budget, less a second for the report to travel back.
python_budget=$((budget - $(elapsed) - 1))
[ "$python_budget" -lt 1 ] && python_budget=1
if [ "$quick" = 1 ]; then quick_flag=--quick; else quick_flag=; fi

if [ -n "$work" ]; then
	run_limited "$python_budget" python "$python_path" -c "$python_source" --envctl-wrapped --budget "$python_budget" $quick_flag
	if have tail; then
		python_stderr=$(tail -n 60 "$work/python.err" 2>/dev/null | json_text)
	else
		python_stderr=$(json_file "$work/python.err")
	fi
	printf '%s\n{"path":%s,"budget_seconds":%s,"exit_status":%s,"timed_out":%s,"stderr":%s}\n' \
		"$MARK_PYTHON_RUN" "$(json_value "$python_path")" "$python_budget" "$(json_number "$last_status")" \
		"$last_timed_out" "$python_stderr"
	printf '%s\n' "$MARK_PYTHON_OUTPUT"
	cat "$work/python.out" 2>/dev/null
	printf '\n%s\n' "$MARK_END"
else
	# No folder to write to: the Python half prints straight through, with no watchdog
	# (envctl's own timeout still bounds the whole check).
	printf '%s\n' "$MARK_PYTHON_OUTPUT"
	"$python_path" -c "$python_source" --envctl-wrapped --budget "$python_budget" $quick_flag 2>/dev/null </dev/null
	status=$?
	printf '\n%s\n{"path":%s,"budget_seconds":%s,"exit_status":%s,"timed_out":false,"stderr":null}\n%s\n' \
		"$MARK_PYTHON_RUN" "$(json_value "$python_path")" "$python_budget" "$status" "$MARK_END"
fi
exit 0
