"""Whether the file under check changed the grader: ``Snapshot(config)``, then ``.changed()``.

The file runs in the lanes' pytest processes, with their rights (issue 57): at its import or in a
call it can replace what grades it (``_pytest.runner.call_and_report``, ``Function.runtest``, a
hook that writes passes, Hypothesis's profiles, the kit's ``expect``) and turn failing steps into
passes. A lane takes a snapshot of what it relies on before the file is loaded, and compares
after the load and after each unit of tests (``lanes_plugin``): a change ends the check of that
file as "not graded: it changed the grader". Taken once (about 30 ms), compared often (a few
ms: each object is looked up where it was and compared by identity):

* every function of the grader's modules (pytest, pluggy, Hypothesis, pytest-asyncio, the kit,
  the suite's test modules and conftest), at module level and in the module's own classes, and
  its code object;
* the module objects themselves, as ``sys.modules`` holds them;
* the implementations of every pytest hook, and Hypothesis's settings profiles.

It is a check where it is cheap, not a wall: a file that means harm can still write into the
lanes' folder or the processes' memory. The README says what ``check`` trusts.
"""

import sys
import types

# Top-level packages and modules whose code grades the file.
GRADER = ("_pytest", "pytest", "pluggy", "hypothesis", "_hypothesis_pytestplugin", "_hypothesis_globals",
          "pytest_asyncio", "resume", "properties", "stateful", "conftest", "tests")


def _graders(impl_module):
    for name, module in list(sys.modules.items()):
        if module is not None and module is not impl_module and name.partition(".")[0] in GRADER:
            yield name, module


def _function(value):
    """The function ``value`` is or wraps (a classmethod, a staticmethod, a property's getter), or None."""
    if isinstance(value, (classmethod, staticmethod)):
        value = value.__func__
    elif isinstance(value, property):
        value = value.fget
    return value if isinstance(value, types.FunctionType) else None


class Snapshot:
    """What the lanes rely on, taken now; ``changed()`` says what is no longer so."""

    def __init__(self, config, impl_module=None):
        self.config = config
        self.places = []  # (name, the mapping, its key, the object found there, its code or None)
        for name, module in _graders(impl_module):
            self.places.append((f"the module {name}", sys.modules, name, module, None))
            for attribute, value in list(vars(module).items()):
                if (function := _function(value)) is not None:
                    self.places.append((f"{name}.{attribute}", vars(module), attribute, value, function.__code__))
                elif isinstance(value, type) and getattr(value, "__module__", None) == name:
                    for inner, member in list(vars(value).items()):
                        if (function := _function(member)) is not None:
                            self.places.append((f"{name}.{attribute}.{inner}", vars(value), inner, member,
                                                function.__code__))
        self.hooks = self._hooks()
        self.profiles = self._profiles()

    def _hooks(self):
        hooks = self.config.pluginmanager.hook
        return {hook: tuple(impl.function for impl in caller.get_hookimpls())
                for hook, caller in list(vars(hooks).items()) if hasattr(caller, "get_hookimpls")}

    @staticmethod
    def _profiles():
        hypothesis = sys.modules.get("hypothesis")
        if hypothesis is None:
            return None
        settings = hypothesis.settings
        return settings.get_current_profile_name(), dict(settings._profiles)

    def changed(self):
        """The names of what is no longer as it was, a few (``[]``: nothing)."""
        found = []
        for name, mapping, key, value, code in self.places:
            now = mapping.get(key, _GONE)
            if now is not value or (code is not None and _function(now).__code__ is not code):
                found.append(name)
        hooks = self._hooks()
        found += [f"pytest's hook {hook}" for hook, impls in self.hooks.items()
                  if len(hooks.get(hook, ())) != len(impls) or any(a is not b for a, b in zip(hooks[hook], impls))]
        profiles = self._profiles()
        if profiles is not None and self.profiles is not None and (
                profiles[0] != self.profiles[0] or profiles[1].keys() != self.profiles[1].keys()
                or any(profiles[1][key] is not value for key, value in self.profiles[1].items())):
            found.append("Hypothesis's settings profiles")
        return found[:3] + ([f"{len(found) - 3} more"] if len(found) > 3 else [])


_GONE = object()
