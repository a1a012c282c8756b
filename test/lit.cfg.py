# -*- Python -*-
import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "FlashMLIR"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.fa_obj_root, "test")
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "Inputs"]

config.substitutions.append(("%PATH%", config.environment["PATH"]))
llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

tool_dirs = [config.fa_tools_dir, config.llvm_tools_dir]
tools = ["fa-opt", "fa-compile"]
llvm_config.add_tool_substitutions(tools, tool_dirs)

# ptxas assembles the generated PTX. CI has CUDA at /usr/local/cuda; there a
# missing ptxas is an error, not a silently skipped test.
import shutil

ptxas = shutil.which("ptxas") or shutil.which(
    "ptxas", path=os.environ.get("CUDA_HOME", "/usr/local/cuda") + "/bin")
if ptxas:
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))
elif os.environ.get("CI"):
    lit_config.fatal("ptxas not found (looked in PATH and /usr/local/cuda/bin)")
else:
    lit_config.warning("ptxas not found: PTX assembly tests are unsupported")
