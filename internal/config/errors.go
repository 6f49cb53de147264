package config

import (
	"errors"
	"sort"
	"strconv"
	"strings"
)

// Error is one problem in a configuration, located by file, line and key
// path. Parse and Validate return these, joined with errors.Join when there
// are several.
type Error struct {
	File string // as passed to Parse; empty for a Config built in code
	Line int    // 1-based; 0 when unknown
	Key  string // key path such as "endpoints[0].mode"; empty for whole-file problems
	Msg  string
}

// Error formats the problem as "file:line: key: message", leaving out the
// parts that are unknown.
func (e *Error) Error() string {
	var b strings.Builder
	switch {
	case e.File != "" && e.Line > 0:
		b.WriteString(e.File + ":" + strconv.Itoa(e.Line) + ": ")
	case e.File != "":
		b.WriteString(e.File + ": ")
	case e.Line > 0:
		b.WriteString("line " + strconv.Itoa(e.Line) + ": ")
	}
	if e.Key != "" {
		b.WriteString(e.Key + ": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// joinErrors sorts errs by line and joins them. Sorting is stable so that
// problems on the same line keep the order they were found in, which is
// the order of the keys in the file.
func joinErrors(errs []*Error) error {
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Line < errs[j].Line })
	list := make([]error, len(errs))
	for i, e := range errs {
		list[i] = e
	}
	return errors.Join(list...)
}

// wantList renders the accepted values of a setting as "a or b" or
// "a, b or c".
func wantList(values []string) string {
	switch len(values) {
	case 0:
		return ""
	case 1:
		return values[0]
	}
	return strings.Join(values[:len(values)-1], ", ") + " or " + values[len(values)-1]
}
