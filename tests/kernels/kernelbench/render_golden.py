"""Writes golden/<problem>.<option>.txt: KernelBench's own prompt constructor (src/kernelbench/prompt_constructor_toml
.py, backend "triton", precision fp32) rendering a problem with rlx's one-shot example pair in place of its own
(its prompts.toml, with the two example paths pointed at rlx's files). The goldens in golden/ were made at
KernelBench commit 423217d9fda91e0c2d67e4a43bf62f96f6d104f1 (2026-03-05); tests/kernels/test_kernelbench_prompt.py
compares rlx's rendering with them.

Usage (from the repository root; KernelBench's modules import a few packages its prompt code does not use, which
this replaces with empty stand-ins): python tests/kernels/kernelbench/render_golden.py <KernelBench checkout>
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
STUBS = {
    "dotenv.py": "def load_dotenv(*args, **kwargs):\n    pass\n",
    "openai.py": "class OpenAI:\n    pass\n",
    "litellm.py": "def completion(*args, **kwargs):\n    pass\n",
    "tomli.py": "from tomllib import *  # noqa: F403\n",
}


def main(checkout: Path) -> None:
    sys.path.insert(0, str(HERE.parents[2]))
    from rlx.data.kernelbench.prompt import EXAMPLE_MODEL, EXAMPLE_MODEL_NEW

    work = Path(tempfile.mkdtemp())
    for name, text in STUBS.items():
        (work / name).write_text(text)
    sys.path[:0] = [str(work), str(checkout / "src")]
    from kernelbench import prompt_constructor_toml as constructor

    (work / "ex.py").write_text(EXAMPLE_MODEL)
    (work / "ex_new.py").write_text(EXAMPLE_MODEL_NEW)
    toml = Path(constructor.PROMPTS_TOML).read_text()
    for example, ours in (("model_ex_add.py", "ex.py"), ("model_new_ex_add_triton.py", "ex_new.py")):
        published = f'"src/kernelbench/prompts/{example}"'
        assert published in toml, f"KernelBench's prompts.toml no longer names {published}"
        toml = toml.replace(published, f'"{work}/{ours}"')
    (work / "prompts.toml").write_text(toml)
    for problem in sorted((HERE / "level2").glob("*.py")):
        for option in ("one_shot", "zero_shot"):
            text = constructor.render_prompt_by_option(
                prompts_toml=str(work / "prompts.toml"),
                backend="triton",
                option=option,
                context={"ref_arch_src": problem.read_text()},
                precision="fp32",
            )
            (HERE / "golden" / f"{problem.stem}.{option}.txt").write_text(text)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
