"""Helpers of the generated Wireshark Lua dissectors (software/minisharp/dissector.py, software/rifl/dissector.py)."""


def lua_enum(name, table):
    """A Lua table `name` of value -> string, for a ProtoField's value names."""
    items = ", ".join(f'[{k}] = "{v}"' for k, v in sorted(table.items()))
    return f"local {name} = {{ {items} }}"


def write_lua(path, lines):
    """Write the dissector's lines to `path`; returns the path."""
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path
