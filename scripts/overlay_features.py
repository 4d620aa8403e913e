#!/usr/bin/env python3
"""Prints an overlay's [features] table, derived from upstream's manifest.

Every upstream feature name (declared, plus the implicit ones its optional
dependencies create) forwards to `upstream/<name>`, keeps the references to
other features that upstream makes, and adds the overlay's own optional
dependencies that the fork's code behind that feature needs.

    scripts/overlay_features.py PATH/TO/rmcp-X.Y.Z/Cargo.toml
"""
import sys
import tomllib

# The overlay's own optional dependencies, by the feature that needs them.
OWN = {
    "__reqwest": ["dep:reqwest"],
    "client-side-sse": ["dep:sse-stream", "dep:http"],
    "transport-streamable-http-server": [
        "dep:bytes", "dep:http", "dep:http-body", "dep:http-body-util",
        "dep:sse-stream", "dep:tower-service",
    ],
    "transport-streamable-http-server-session": ["dep:tokio-stream"],
}


def table(manifest):
    declared = manifest["features"]
    optional = [
        name for name, spec in manifest.get("dependencies", {}).items()
        if isinstance(spec, dict) and spec.get("optional")
    ]
    named = {x[4:].split("?")[0] for v in declared.values() for x in v if x.startswith("dep:")}
    implicit = [name for name in optional if name not in named]
    names = set(declared) | set(implicit)
    out = {}
    for name in sorted(names, key=lambda n: (n in implicit, n != "default", n)):
        if name == "default":
            out[name] = list(declared[name])
            continue
        refs = [x for x in declared.get(name, []) if x in names]
        out[name] = [f"upstream/{name}"] + OWN.get(name, []) + refs
    return out


def render(out):
    lines = ["[features]"]
    for name, items in out.items():
        key = name if name == "default" else f'"{name}"'
        lines.append(f"{key} = [" + ", ".join(f'"{x}"' for x in items) + "]")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    with open(sys.argv[1], "rb") as f:
        sys.stdout.write(render(table(tomllib.load(f))))
