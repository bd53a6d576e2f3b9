"""The wheel carries a compiled libcoordscore.so, so it is a platform wheel: its files go to
platlib (auditwheel repairs only platlib wheels) and it is tagged py3-none-<platform>, because
the Python code itself is pure ctypes and any Python 3 can load it. `make wheel` then lets
auditwheel bundle libsodium and liblmdb and set the manylinux tag."""
from setuptools import setup
from setuptools.dist import Distribution

try:
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # setuptools < 70
    from wheel.bdist_wheel import bdist_wheel


class BinaryDistribution(Distribution):
    """A distribution with a native library: installed to platlib, not purelib."""

    def has_ext_modules(self):
        return True


class PlatformWheel(bdist_wheel):
    def finalize_options(self):
        super().finalize_options()
        self.root_is_pure = False

    def get_tag(self):
        _, _, platform = super().get_tag()
        return "py3", "none", platform


setup(distclass=BinaryDistribution, cmdclass={"bdist_wheel": PlatformWheel})
