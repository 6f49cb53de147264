package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"go.yaml.in/yaml/v3"
)

// Changes made while sluice runs (the admin API) are written back to the configuration file by
// editing its YAML tree: comments, key order and ${NAME} references stay as they were; only the
// values changed are rewritten (the file's indentation becomes two spaces).

// EditEndpoint returns data, a configuration file, with endpoint name's keys set to the given
// values (any value yaml.v3 encodes; nil removes the key). A key already there keeps its place
// and its comments, a new one goes last. A mapping written in flow style ({a: 1}) stays so.
func EditEndpoint(path string, data []byte, name string, set map[string]any) ([]byte, error) {
	root, err := readYAML(path, data)
	if err != nil {
		return nil, err
	}
	ep, err := endpointNode(root, name)
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if err := setKey(ep, k, set[k]); err != nil {
			return nil, fmt.Errorf("endpoints %s: %s: %w", name, k, err)
		}
	}
	var doc yaml.Node
	doc.Kind, doc.Content = yaml.DocumentNode, []*yaml.Node{root}
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// endpointNode finds the mapping of endpoint name in the file's top-level mapping.
func endpointNode(root *yaml.Node, name string) (*yaml.Node, error) {
	if root == nil || root.Kind != yaml.MappingNode {
		return nil, errors.New("the file is not a mapping of settings")
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if root.Content[i].Value != "endpoints" {
			continue
		}
		list := root.Content[i+1]
		if list.Kind != yaml.SequenceNode {
			return nil, errors.New("endpoints is not a list")
		}
		for _, e := range list.Content {
			if e.Kind != yaml.MappingNode {
				continue
			}
			for j := 0; j+1 < len(e.Content); j += 2 {
				if e.Content[j].Value == "name" && e.Content[j+1].Value == name {
					return e, nil
				}
			}
		}
	}
	return nil, fmt.Errorf("no endpoint is named %q in the file", name)
}

// setKey sets key in mapping m to v (nil: removes it).
func setKey(m *yaml.Node, key string, v any) error {
	at := -1
	for j := 0; j+1 < len(m.Content); j += 2 {
		if m.Content[j].Value == key {
			at = j
			break
		}
	}
	if v == nil {
		if at >= 0 {
			m.Content = slices.Delete(m.Content, at, at+2)
		}
		return nil
	}
	var n yaml.Node
	if err := n.Encode(v); err != nil {
		return err
	}
	if at < 0 {
		m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: key}, &n)
		return nil
	}
	old := m.Content[at+1]
	if old.Kind == n.Kind && old.Style&yaml.FlowStyle != 0 {
		n.Style |= yaml.FlowStyle
	}
	n.LineComment, n.HeadComment, n.FootComment = old.LineComment, old.HeadComment, old.FootComment
	m.Content[at+1] = &n
	return nil
}

// WriteFile replaces the file at path with data atomically: a temporary file in the same
// directory, synced, then renamed over it, keeping the file's mode.
func WriteFile(path string, data []byte) error {
	mode := os.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename: nothing there
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
