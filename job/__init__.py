"""The engine-neutral job every engine runs: config, plan, stages, output rows, parts, prefix, manifest, driver. Imports no engine."""
