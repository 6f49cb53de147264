package config

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"syscall"

	"go.yaml.in/yaml/v3"
)

// Changes made while sluice runs (the admin API) are written back to the configuration file by
// editing its YAML tree: comments, key order and ${NAME} references stay as they were; only the
// values changed are rewritten (the file's indentation becomes two spaces).

// EditEndpoint returns data, a configuration file, with endpoint name's keys set to the given
// values (any value yaml.v3 encodes; nil removes the key; a MergePatch merges into the mapping
// there). A key already there keeps its place and its comments, a new one goes last. A mapping
// written in flow style ({a: 1}) stays so.
func EditEndpoint(path string, data []byte, name string, set map[string]any) ([]byte, error) {
	root, err := readYAML(path, data)
	if err != nil {
		return nil, err
	}
	ep, err := endpointNode(root, name)
	if err != nil {
		return nil, err
	}
	if err := setKeys(ep, "endpoints "+name, set); err != nil {
		return nil, err
	}
	return encodeYAML(root)
}

// AddEndpoint returns data with a new endpoint appended to the endpoints list: name first, then
// the given keys in name order (nil values left out).
func AddEndpoint(path string, data []byte, name string, set map[string]any) ([]byte, error) {
	return appendNamed(path, data, "endpoints", "an endpoint", name, set)
}

// RemoveEndpoint returns data without endpoint name.
func RemoveEndpoint(path string, data []byte, name string) ([]byte, error) {
	root, err := readYAML(path, data)
	if err != nil {
		return nil, err
	}
	if err := removeNamed(root, "endpoints", "endpoint", name); err != nil {
		return nil, err
	}
	return encodeYAML(root)
}

// AddBackend returns data with a new backend appended to the backends list: name first, then
// the given keys in name order (nil values left out).
func AddBackend(path string, data []byte, name string, set map[string]any) ([]byte, error) {
	return appendNamed(path, data, "backends", "a backend", name, set)
}

// appendNamed returns data with a mapping appended to the top-level list key: name first, then
// set's keys in name order. what is one of the list's items, for the error when one is named
// name already ("a backend").
func appendNamed(path string, data []byte, key, what, name string, set map[string]any) ([]byte, error) {
	root, err := readYAML(path, data)
	if err != nil {
		return nil, err
	}
	list, err := topList(root, key)
	if err != nil {
		return nil, err
	}
	if namedIn(list, name) != nil {
		return nil, fmt.Errorf("%s is named %q already", what, name)
	}
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	if err := setKey(m, "name", name); err != nil {
		return nil, err
	}
	if err := setKeys(m, key+" "+name, set); err != nil {
		return nil, err
	}
	list.Content = append(list.Content, m)
	return encodeYAML(root)
}

// RemoveBackend returns data without backend name, and without the read weights that the
// endpoints give it.
func RemoveBackend(path string, data []byte, name string) ([]byte, error) {
	root, err := readYAML(path, data)
	if err != nil {
		return nil, err
	}
	if err := removeNamed(root, "backends", "backend", name); err != nil {
		return nil, err
	}
	if eps, err := topList(root, "endpoints"); err == nil {
		for _, e := range eps.Content {
			if w := valueOf(e, "read_weights"); w != nil && w.Kind == yaml.MappingNode {
				if err := setKey(w, name, nil); err != nil {
					return nil, err
				}
			}
		}
	}
	return encodeYAML(root)
}

// removeNamed takes the mapping named name (a what: "backend") out of the top-level list key.
func removeNamed(root *yaml.Node, key, what, name string) error {
	list, err := topList(root, key)
	if err != nil {
		return err
	}
	m := namedIn(list, name)
	if m == nil {
		return fmt.Errorf("no %s is named %q in the file", what, name)
	}
	list.Content = slices.DeleteFunc(list.Content, func(n *yaml.Node) bool { return n == m })
	return nil
}

// valueOf is key's value in mapping m, or nil.
func valueOf(m *yaml.Node, key string) *yaml.Node {
	if m.Kind != yaml.MappingNode {
		return nil
	}
	for j := 0; j+1 < len(m.Content); j += 2 {
		if m.Content[j].Value == key {
			return m.Content[j+1]
		}
	}
	return nil
}

// namedIn is the mapping of list whose name is name, or nil.
func namedIn(list *yaml.Node, name string) *yaml.Node {
	for _, e := range list.Content {
		if v := valueOf(e, "name"); v != nil && v.Value == name {
			return e
		}
	}
	return nil
}

func encodeYAML(root *yaml.Node) ([]byte, error) {
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

// topList is the top-level sequence key (endpoints, backends).
func topList(root *yaml.Node, key string) (*yaml.Node, error) {
	if root == nil || root.Kind != yaml.MappingNode {
		return nil, errors.New("the file is not a mapping of settings")
	}
	list := valueOf(root, key)
	switch {
	case list == nil:
		return nil, fmt.Errorf("the file has no %s list", key)
	case list.Kind != yaml.SequenceNode:
		return nil, fmt.Errorf("%s is not a list", key)
	}
	return list, nil
}

// endpointNode finds the mapping of endpoint name in the file's top-level mapping.
func endpointNode(root *yaml.Node, name string) (*yaml.Node, error) {
	list, err := topList(root, "endpoints")
	if err != nil {
		return nil, err
	}
	if e := namedIn(list, name); e != nil {
		return e, nil
	}
	return nil, fmt.Errorf("no endpoint is named %q in the file", name)
}

// setKeys sets the keys of mapping m (what names it in errors: "endpoints rw") from set, in
// name order ("name" itself is left as it is).
func setKeys(m *yaml.Node, what string, set map[string]any) error {
	for _, k := range slices.Sorted(maps.Keys(set)) {
		if k == "name" {
			continue
		}
		if err := setKey(m, k, set[k]); err != nil {
			return fmt.Errorf("%s: %s: %w", what, k, err)
		}
	}
	return nil
}

// MergePatch is a value for EditEndpoint that changes the mapping at its key as a JSON merge
// patch (RFC 7386) changes an object: each key of Patch is set (a nil value removes it, a
// map[string]any value merges one level down in turn), and the keys it does not name stay as
// the file has them, comments and ${NAME} references included. Base is what the key holds when
// the file does not give it a mapping (the defaults in force: an endpoint without read_weights
// reads from every replica): the patch applies to Base and the result is written whole.
type MergePatch struct {
	Patch map[string]any
	Base  map[string]any
}

// merged is Base with Patch applied, as RFC 7386 applies a patch to an object.
func (mp MergePatch) merged() map[string]any {
	out := maps.Clone(mp.Base)
	if out == nil {
		out = map[string]any{}
	}
	for k, v := range mp.Patch {
		switch v := v.(type) {
		case nil:
			delete(out, k)
		case map[string]any:
			base, _ := out[k].(map[string]any)
			out[k] = MergePatch{Patch: v, Base: base}.merged()
		default:
			out[k] = v
		}
	}
	return out
}

// setKey sets key in mapping m to v (nil: removes it; a MergePatch: merges into it).
func setKey(m *yaml.Node, key string, v any) error {
	at := -1
	for j := 0; j+1 < len(m.Content); j += 2 {
		if m.Content[j].Value == key {
			at = j
			break
		}
	}
	if mp, ok := v.(MergePatch); ok {
		if at < 0 || m.Content[at+1].Kind != yaml.MappingNode {
			v = mp.merged()
		} else {
			into := m.Content[at+1]
			for _, k := range slices.Sorted(maps.Keys(mp.Patch)) {
				pv := mp.Patch[k]
				if sub, ok := pv.(map[string]any); ok {
					pv = MergePatch{Patch: sub}
				}
				if err := setKey(into, k, pv); err != nil {
					return err
				}
			}
			return nil
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
// directory, synced, then renamed over it, keeping the file's mode and owner. A symbolic link
// (configuration management's, a Kubernetes ConfigMap's) stays one: the file it points to is
// replaced.
func WriteFile(path string, data []byte) error {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	mode := os.FileMode(0o644)
	uid, gid := -1, -1
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
		if sys, ok := st.Sys().(*syscall.Stat_t); ok {
			uid, gid = int(sys.Uid), int(sys.Gid)
		}
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
	if uid >= 0 && (uid != os.Getuid() || gid != os.Getgid()) {
		_ = tmp.Chown(uid, gid) // best effort: only root may give a file away
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
