module patchbench/launcher

go 1.21
