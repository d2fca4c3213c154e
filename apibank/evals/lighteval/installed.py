"""Whether the installed lighteval can run the tasks; needs no lighteval to import."""

from __future__ import annotations

from apibank.errors import BrokenExtra, MissingExtra, require_extra

# The release whose custom-task API (LightevalTaskConfig, Doc, SampleLevelComputation, ModelResponse.text)
# the tasks are written against; lighteval changes it between minor releases.
SUPPORTED = (">=0.13", "<0.14")
# lighteval 0.13's details logger hashes text with xxhash.xxh64(str), which xxhash 4 refuses ("Strings must
# be encoded before hashing"); lighteval itself does not bound xxhash (datasets brings it).
XXHASH = "<4"


def check_installed() -> str:
    """The installed lighteval's version; :class:`MissingExtra` when it is absent or outside :data:`SUPPORTED`,
    :class:`BrokenExtra` when its xxhash would fail the run when saving the details, after generating."""
    from importlib.metadata import version

    from packaging.specifiers import SpecifierSet

    require_extra("lighteval", ("lighteval", "xxhash"), "API-Bank's lighteval tasks")
    installed = version("lighteval")
    if installed not in SpecifierSet(",".join(SUPPORTED), prereleases=True):
        raise MissingExtra(f"API-Bank's lighteval tasks need lighteval {','.join(SUPPORTED)}, found {installed}: "
                           "pip install 'apibank[lighteval]'")
    if version("xxhash") not in SpecifierSet(XXHASH, prereleases=True):
        raise BrokenExtra(f"lighteval {installed} saves its details with xxhash{XXHASH} (it hashes str, which "
                          f"xxhash {version('xxhash')} refuses): pip install 'apibank[lighteval]'")
    return installed
