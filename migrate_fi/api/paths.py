"""The public path a call reaches, as one value type.

The resolver names what an expression refers to with dotted paths; a call on an instance is
written with ``()``: ``flashinfer.BatchDecodeWithPagedKVCacheWrapper().plan`` is the method
``plan`` of an instance of that class. `ApiPath` parses that notation once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeGuard

__all__ = ["CACHE_ATTRIBUTES", "ApiPath", "is_flashinfer", "is_public", "is_user_facing"]

# what `functools.cache` / `functools.lru_cache` give the function they wrap (`cache_clear()`...)
CACHE_ATTRIBUTES = ("cache_clear", "cache_info", "cache_parameters")

_INSTANCE = "()."


def is_flashinfer(path: str | None) -> TypeGuard[str]:
    return path is not None and (path == "flashinfer" or path.startswith("flashinfer."))


def is_public(path: str) -> bool:
    """No component of ``path`` starts with `_`."""
    return "._" not in path and not path.startswith("_")


# folders of generated or kernel-internal code, which FlashInfer's users do not call
_INTERNAL_PARTS = frozenset({"kernel_src", "kernels", "csrc", "generated", "tests", "benchmarks"})


def is_user_facing(path: str) -> bool:
    """Is ``path`` (a function, class or method) what FlashInfer's users call: reached from the
    package or one subpackage (``flashinfer.X``, ``flashinfer.comm.X``, their methods), never
    through a folder of generated or kernel code? (`migrate-fi api-diff --public`)"""
    api = ApiPath(path)
    parts = (api.owner if api.is_method else path).split(".")
    return len(parts) <= 3 and not _INTERNAL_PARTS.intersection(parts)


@dataclass(frozen=True)
class ApiPath:
    text: str

    @classmethod
    def method_of(cls, class_path: str, method: str) -> ApiPath:
        return cls(f"{class_path}{_INSTANCE}{method}")

    @property
    def is_method(self) -> bool:
        """A method called on an instance: ``<class path>().<method>``."""
        return _INSTANCE in self.text

    @property
    def owner(self) -> str:
        """The class of an instance method's path; the enclosing path otherwise."""
        if self.is_method:
            return self.text.rpartition(_INSTANCE)[0]
        return self.text.rpartition(".")[0]

    @property
    def name(self) -> str:
        """The last component: the function, class or method name."""
        if self.is_method:
            return self.text.rpartition(_INSTANCE)[2]
        return self.text.rpartition(".")[2]

    @property
    def dotted(self) -> str:
        """The path without the instance marker: ``flashinfer.Wrapper.plan``."""
        return self.text.replace(_INSTANCE, ".")

    def display(self) -> str:
        """For messages: ``Wrapper.plan`` for a method, ``Cls.static`` for a class attribute,
        ``f`` for a function, ``f.cache_clear`` for what a cache gives it."""
        if self.is_method:
            return f"{self.owner.rsplit('.', 1)[-1]}.{self.name}"
        parts = self.text.split(".")
        if len(parts) >= 2 and (parts[-2][:1].isupper() or parts[-1] in CACHE_ATTRIBUTES):
            return ".".join(parts[-2:])
        return parts[-1]

    def __str__(self) -> str:
        return self.text
