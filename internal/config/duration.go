package config

import (
	"errors"
	"fmt"
	"time"

	"go.yaml.in/yaml/v3"
)

// Duration is a time.Duration written in YAML as a Go duration string such
// as "5s", "250ms" or "1m30s". A bare number is rejected (except 0) because
// "timeout: 30" is ambiguous between seconds and milliseconds, and guessing
// wrong by a factor of 1000 is worse than asking.
type Duration struct{ time.Duration }

// errDurationSyntax is the reason given for every unparsable duration.
var errDurationSyntax = errors.New("want a duration with a unit, such as 5s, 250ms or 1m")

// parseDuration is the strict parser shared by the config decoder and
// UnmarshalYAML.
func parseDuration(s string) (time.Duration, error) {
	if s == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, errDurationSyntax
	}
	return d, nil
}

// UnmarshalYAML lets a Duration be decoded by yaml.v3 directly, with the
// same strictness as Parse (but without ${NAME} expansion).
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: %v", n.Line, errDurationSyntax)
	}
	v, err := parseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: invalid value %q (%v)", n.Line, n.Value, err)
	}
	d.Duration = v
	return nil
}

// MarshalYAML writes the duration in the form UnmarshalYAML accepts.
func (d Duration) MarshalYAML() (any, error) {
	return d.String(), nil
}
