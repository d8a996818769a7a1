"""The checker: numbered validity rules over typed models, and hardware profiles.

``iter_diagnostics(model, profile=None)`` yields every finding;
``check_model(model, profile=None)`` raises ValidationError carrying every
error and returns the warnings otherwise. Rules are documented in
proposal/rules.md (generated) and proposal/spec/validity.md (normative).
"""

from onnx_qtypes.checker.diagnostics import Diagnostic, Location, Severity, ValidationError
from onnx_qtypes.checker.engine import check_model, iter_diagnostics
from onnx_qtypes.checker.profile import Profile, ProfileError, builtin_names, load_profile
from onnx_qtypes.checker.registry import RULES, Rule, UnknownRuleError, all_rules, get_rule, select_rules

__all__ = [
    "RULES",
    "Diagnostic",
    "Location",
    "Profile",
    "ProfileError",
    "Rule",
    "Severity",
    "ValidationError",
    "all_rules",
    "builtin_names",
    "check_model",
    "get_rule",
    "iter_diagnostics",
    "load_profile",
    "select_rules",
    "UnknownRuleError",
]
