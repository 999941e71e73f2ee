"""envctl nvidia-check, the Python half: what PyTorch sees inside the container.

envctl embeds this file in its binary and runs it in the container with the image's own
python3 (or python), after the shell half (nvidia_check.sh) has gathered what needs no
Python. It prints ONE JSON document with the facts; envctl judges them. It never decides
anything itself, and nothing may stop the report: every probe runs in try/except and a
failure becomes the probe's `error` text.

Only the standard library and torch (when importable) are used, and the source stays
compatible with old interpreters (no f-strings), so an old image still gets a report.

Run it by hand to record a fixture (see tests/fixtures/nvidia-check/README.md):

    python3 nvidia_check.py            # pretty JSON on stdout
    python3 nvidia_check.py --quick    # without the timed matmul and the copy bandwidth

envctl runs it as `python3 -c SOURCE --envctl-wrapped --budget SECONDS [--quick]`: then the
document is printed on one line after a marker line, so stray output of the interpreter or
of imported packages cannot be mistaken for it.
"""

import json
import math
import os
import platform
import sys
import time
import traceback
import warnings

SCHEMA_VERSION = 1
MARKER = "@@envctl-nvidia-check:python@@"

# Square matrices for the correctness check: small enough for any GPU, large enough that
# every tile of a cuBLAS kernel runs.
CHECK_SIZE = 256
# The timed matmul and the pinned copy.
BENCHMARK_SIZE_LARGE = 8192
BENCHMARK_SIZE_SMALL = 4096
BENCHMARK_SECONDS = 0.5
BENCHMARK_MAX_ITERATIONS = 200
COPY_BYTES = 256 * 1024 * 1024
COPY_REPEATS = 5


def error_text(error):
    """`Type: message`, whatever the exception holds."""
    try:
        text = str(error).strip()
    except Exception:  # an exception whose __str__ itself fails
        text = "<unprintable>"
    name = type(error).__name__
    return "{}: {}".format(name, text) if text else name


def finite(value):
    """A float JSON can carry: NaN and infinities become None (json would write NaN)."""
    try:
        value = float(value)
    except Exception:
        return None
    if math.isnan(value) or math.isinf(value):
        return None
    return value


def arguments():
    quick = "--quick" in sys.argv
    wrapped = "--envctl-wrapped" in sys.argv
    budget = None
    if "--budget" in sys.argv:
        try:
            budget = float(sys.argv[sys.argv.index("--budget") + 1])
        except Exception:
            budget = None
    return quick, wrapped, budget


class Clock(object):
    """The time left of the budget envctl gave, so slow probes are skipped, not cut."""

    def __init__(self, budget):
        self.start = time.time()
        self.budget = budget

    def left(self):
        if self.budget is None:
            return None
        return self.budget - (time.time() - self.start)

    def enough_for(self, seconds):
        left = self.left()
        return left is None or left > seconds


def python_facts():
    facts = {"version": None, "executable": None, "implementation": None}
    try:
        facts["version"] = platform.python_version()
        facts["executable"] = sys.executable
        facts["implementation"] = platform.python_implementation()
    except Exception as error:
        facts["error"] = error_text(error)
    return facts


def record_warnings(caught, into):
    for warning in caught:
        try:
            into.append(str(warning.message))
        except Exception:
            pass


def torch_facts(torch, report):
    """Versions, CUDA availability, devices and the arch list: everything but compute."""
    facts = report["torch"]
    caught_warnings = facts["warnings"]
    try:
        facts["version"] = str(torch.__version__)
    except Exception as error:
        facts["version_error"] = error_text(error)
    try:
        cuda = torch.version.cuda
        facts["cuda"] = None if cuda is None else str(cuda)
    except Exception as error:
        facts["cuda_error"] = error_text(error)
    try:
        hip = getattr(torch.version, "hip", None)
        facts["hip"] = None if hip is None else str(hip)
    except Exception:
        pass
    try:
        facts["debug"] = bool(torch.version.debug)
    except Exception:
        pass
    try:
        facts["cudnn_available"] = bool(torch.backends.cudnn.is_available())
        version = torch.backends.cudnn.version()
        facts["cudnn_version"] = None if version is None else int(version)
    except Exception as error:
        facts["cudnn_error"] = error_text(error)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            facts["cuda_available"] = bool(torch.cuda.is_available())
        record_warnings(caught, caught_warnings)
    except Exception as error:
        facts["cuda_available_error"] = error_text(error)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            facts["device_count"] = int(torch.cuda.device_count())
        record_warnings(caught, caught_warnings)
    except Exception as error:
        facts["device_count_error"] = error_text(error)
    try:
        facts["arch_list"] = [str(arch) for arch in torch.cuda.get_arch_list()]
    except Exception as error:
        facts["arch_list_error"] = error_text(error)
    try:
        facts["tf32_matmul_allowed"] = bool(torch.backends.cuda.matmul.allow_tf32)
        facts["tf32_cudnn_allowed"] = bool(torch.backends.cudnn.allow_tf32)
    except Exception as error:
        facts["tf32_error"] = error_text(error)
    if facts.get("cuda_available"):
        try:
            version = torch.cuda.nccl.version()
            if isinstance(version, tuple):
                facts["nccl_version"] = ".".join(str(part) for part in version)
            else:
                # Before torch 1.x's tuple: one integer, 2708 for 2.7.8 or 21903 for 2.19.3.
                number = int(version)
                if number >= 10000:
                    facts["nccl_version"] = "{}.{}.{}".format(
                        number // 10000, number // 100 % 100, number % 100
                    )
                else:
                    facts["nccl_version"] = "{}.{}.{}".format(
                        number // 1000, number // 100 % 10, number % 100
                    )
        except Exception as error:
            facts["nccl_error"] = error_text(error)


def device_facts(torch, index, caught_warnings):
    device = {"index": index}
    try:
        # is_bf16_supported() and the default stream follow the current device.
        torch.cuda.set_device(index)
    except Exception as error:
        device["set_device_error"] = error_text(error)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            properties = torch.cuda.get_device_properties(index)
            device["name"] = str(properties.name)
            device["capability"] = [int(properties.major), int(properties.minor)]
            device["total_memory_bytes"] = int(properties.total_memory)
            device["multiprocessors"] = int(properties.multi_processor_count)
        record_warnings(caught, caught_warnings)
    except Exception as error:
        device["error"] = error_text(error)
    try:
        # Since torch 2.4 is_bf16_supported() counts emulation too; ask for native support
        # where the argument exists.
        try:
            device["bf16_supported"] = bool(
                torch.cuda.is_bf16_supported(including_emulation=False)
            )
        except TypeError:
            device["bf16_supported"] = bool(torch.cuda.is_bf16_supported())
    except Exception as error:
        device["bf16_error"] = error_text(error)
    return device


def synchronize(torch, index):
    torch.cuda.synchronize(index)


def elementwise_check(torch, index):
    """A kernel of torch's own (not cuBLAS): fails first when torch has no code for the GPU."""
    result = {"ok": False}
    try:
        values = torch.arange(1024, dtype=torch.float32)
        on_device = values.to("cuda:{}".format(index))
        computed = (on_device * 2.0 + 1.0).sum().item()
        expected = float((values * 2.0 + 1.0).sum().item())
        result["ok"] = abs(computed - expected) <= 1e-3 * abs(expected)
        result["value"] = finite(computed)
        result["expected"] = finite(expected)
    except Exception as error:
        result["error"] = error_text(error)
    return result


def matmul_check(torch, index, dtype_name, allow_tf32):
    """A matmul on the GPU against float64 on the CPU: the largest error relative to the
    largest value of the exact product. envctl owns the tolerance."""
    result = {"dtype": dtype_name, "size": CHECK_SIZE, "tf32": allow_tf32}
    previous = None
    try:
        dtype = getattr(torch, dtype_name)
        generator = torch.Generator().manual_seed(1234 + index)
        left = torch.randn(CHECK_SIZE, CHECK_SIZE, generator=generator, dtype=torch.float32)
        right = torch.randn(CHECK_SIZE, CHECK_SIZE, generator=generator, dtype=torch.float32)
        left = left.to(dtype)
        right = right.to(dtype)
        exact = left.double() @ right.double()
        previous = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = allow_tf32
        target = "cuda:{}".format(index)
        started = time.time()
        product = left.to(target) @ right.to(target)
        synchronize(torch, index)
        result["seconds"] = finite(time.time() - started)
        computed = product.double().cpu()
        result["all_finite"] = bool(torch.isfinite(computed).all().item())
        difference = (computed - exact).abs().max().item()
        scale = exact.abs().max().item()
        result["max_abs_error"] = finite(difference)
        result["reference_max_abs"] = finite(scale)
        result["relative_error"] = finite(difference / scale) if scale else None
    except Exception as error:
        result["error"] = error_text(error)
    finally:
        if previous is not None:
            try:
                torch.backends.cuda.matmul.allow_tf32 = previous
            except Exception:
                pass
    return result


def benchmark(torch, index, dtype_name, total_memory, clock):
    """A short timed matmul: TFLOP/s of the dtype training uses on this GPU."""
    result = {"dtype": dtype_name}
    try:
        size = BENCHMARK_SIZE_LARGE
        if total_memory is not None and total_memory < 8 * 1024 ** 3:
            size = BENCHMARK_SIZE_SMALL
        result["size"] = size
        dtype = getattr(torch, dtype_name)
        target = "cuda:{}".format(index)
        left = torch.randn(size, size, device=target, dtype=torch.float32).to(dtype)
        right = torch.randn(size, size, device=target, dtype=torch.float32).to(dtype)
        for _ in range(3):
            product = left @ right
        synchronize(torch, index)
        iterations = 0
        started = time.time()
        while iterations < BENCHMARK_MAX_ITERATIONS:
            product = left @ right
            iterations += 1
            if iterations % 5 == 0:
                synchronize(torch, index)
                if time.time() - started >= BENCHMARK_SECONDS or not clock.enough_for(2):
                    break
        synchronize(torch, index)
        seconds = time.time() - started
        del product, left, right
        result["iterations"] = iterations
        result["seconds"] = finite(seconds)
        if seconds > 0:
            result["tflops"] = finite(2.0 * size ** 3 * iterations / seconds / 1e12)
    except Exception as error:
        result["error"] = error_text(error)
    return result


def copy_bandwidth(torch, index):
    """Host-to-device copies from pinned memory (pageable when pinning fails)."""
    result = {"bytes": COPY_BYTES, "repeats": COPY_REPEATS}
    try:
        try:
            host = torch.empty(COPY_BYTES, dtype=torch.uint8, pin_memory=True)
            result["pinned"] = True
        except Exception as error:
            result["pin_error"] = error_text(error)
            host = torch.empty(COPY_BYTES, dtype=torch.uint8)
            result["pinned"] = False
        target = torch.empty(COPY_BYTES, dtype=torch.uint8, device="cuda:{}".format(index))
        target.copy_(host, non_blocking=True)
        synchronize(torch, index)
        started = time.time()
        for _ in range(COPY_REPEATS):
            target.copy_(host, non_blocking=True)
        synchronize(torch, index)
        seconds = time.time() - started
        del host, target
        result["seconds"] = finite(seconds)
        if seconds > 0:
            result["gigabytes_per_second"] = finite(COPY_BYTES * COPY_REPEATS / seconds / 1e9)
    except Exception as error:
        result["error"] = error_text(error)
    return result


def compute_checks(torch, device, quick, clock):
    index = device["index"]
    capability = device.get("capability") or [0, 0]
    native_bf16 = capability[0] >= 8
    device["elementwise"] = elementwise_check(torch, index)
    device["matmul"] = matmul_check(torch, index, "float32", False)
    if capability[0] >= 8:
        device["tf32_matmul"] = matmul_check(torch, index, "float32", True)
    if device.get("bf16_supported") or native_bf16:
        device["bf16_matmul"] = matmul_check(torch, index, "bfloat16", False)
    if quick:
        return
    if not clock.enough_for(10):
        device["benchmark"] = {"skipped": "too little of the time budget left"}
        device["copy"] = {"skipped": "too little of the time budget left"}
        return
    dtype_name = "bfloat16" if native_bf16 else "float16"
    device["benchmark"] = benchmark(torch, index, dtype_name, device.get("total_memory_bytes"), clock)
    if clock.enough_for(5):
        device["copy"] = copy_bandwidth(torch, index)
    else:
        device["copy"] = {"skipped": "too little of the time budget left"}
    try:
        torch.cuda.empty_cache()
    except Exception:
        pass


def gather(quick, clock):
    report = {
        "schema_version": SCHEMA_VERSION,
        "quick": quick,
        "python": python_facts(),
        "torch": {"found": False, "warnings": []},
        "devices": [],
        "errors": [],
    }
    try:
        import importlib.util

        report["torch"]["found"] = importlib.util.find_spec("torch") is not None
    except Exception as error:
        report["errors"].append({"probe": "find torch", "error": error_text(error)})
    if not report["torch"]["found"]:
        return report
    try:
        started = time.time()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            import torch
        record_warnings(caught, report["torch"]["warnings"])
        report["torch"]["import_seconds"] = finite(time.time() - started)
    except BaseException as error:  # an import can raise SystemExit or worse
        report["torch"]["import_error"] = error_text(error)
        report["torch"]["import_traceback"] = traceback.format_exc()[-4000:]
        return report
    torch_facts(torch, report)
    if not report["torch"].get("cuda_available"):
        return report
    for index in range(report["torch"].get("device_count") or 0):
        device = device_facts(torch, index, report["torch"]["warnings"])
        report["devices"].append(device)
        if "error" in device:
            continue
        try:
            compute_checks(torch, device, quick, clock)
        except Exception as error:
            device["compute_error"] = error_text(error)
    return report


def main():
    quick, wrapped, budget = arguments()
    clock = Clock(budget)
    try:
        report = gather(quick, clock)
    except BaseException as error:
        report = {
            "schema_version": SCHEMA_VERSION,
            "quick": quick,
            "errors": [{"probe": "nvidia-check", "error": error_text(error)}],
        }
    report["seconds"] = finite(time.time() - clock.start)
    try:
        text = json.dumps(report, sort_keys=True, indent=None if wrapped else 2, allow_nan=False)
    except Exception as error:
        text = json.dumps(
            {
                "schema_version": SCHEMA_VERSION,
                "quick": quick,
                "errors": [{"probe": "report", "error": error_text(error)}],
            }
        )
    if wrapped:
        sys.stdout.write("\n" + MARKER + "\n" + text + "\n")
    else:
        sys.stdout.write(text + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
