"""Files domain: a virtual file system with a read-only /system, safe deletes and no silent overwrites."""

from .backend import FilesBackend
from .generator import FilesGenerator

GENERATOR = FilesGenerator()

__all__ = ["FilesBackend", "FilesGenerator", "GENERATOR"]
