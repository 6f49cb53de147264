// Package config loads and checks sluice's YAML configuration file.
//
// The configuration is a set of plain structs (Config and the types it
// holds). There are no package-level globals: Load or Parse returns a new
// *Config every time, so tests and reloads never share state.
//
// Parse is strict on purpose, because a proxy that silently ignores a
// misspelt key (say "adress") routes traffic somewhere the operator did not
// intend. Every problem is reported together with the file, the line and the
// key path, for example:
//
//	sluice.yaml:7: backends[1].adress: unknown key
//	sluice.yaml:12: endpoints[0].mode: invalid value "rw" (want read-write or read-only)
//
// All problems found in one file are reported at once, one per line and
// sorted by line, so an operator can fix a file in a single pass.
//
// String, integer and duration values may contain ${NAME}, which is replaced
// by the environment variable NAME; an unset variable is an error, and $$
// stands for a literal $. This keeps passwords out of the file.
//
// Configs built in Go code rather than parsed from YAML should call
// ApplyDefaults before Validate. The keys, their defaults and their meaning
// are documented in REFERENCE.md next to this file, whose key tables are
// generated from these structs (yaml tags, field doc comments, the defaults
// the code applies): after changing a key, run
// go test ./internal/config -run TestReferenceUpToDate -update.
package config
