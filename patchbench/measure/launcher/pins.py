"""The launcher patchbench runs as root, pinned (written by ``python3 -m
patchbench.measure.launcher pin``; never edit by hand): the Go release it is built with, the
digest of its sources, and per platform the sha256 of the binary they give. patchbench uses a
launcher only when it hashes to this pin."""

GO = "1.26.8"
SOURCES = "3f2b1869a6f49a0b28927d5ed2641b3d7b37fc098e5d15cff8ed91442089c506"
SHA256 = {
    "linux/amd64": "dc4f918555c6917bc858fdb8d26b9767976b32b0cba5200a5dfe73256ad26490",
    "linux/arm64": "82e1b1ca80b893a9a2d2f32c490fc2175e508406f26464eb65747b22c0f6651c",
}
