package main

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
)

// outputError reports err, an error creating or writing the output path
// that arg gave ("--out", "-o", or "output" for an argument), naming both:
// a bad output is the user's choice, and the path alone does not say
// which of the command's files it was. The system's error keeps its own
// path only where it names another file ("mkdir /dev/null: not a
// directory" for --out /dev/null/x); for the path itself, or the
// temporary file beside it that is renamed to it, the name would repeat.
func outputError(arg, path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && (pe.Path == path || isTempTwin(pe.Path, path)) {
		err = pe.Err
	}
	return fmt.Errorf("%s %s: %w", arg, path, err)
}

// isTempTwin tells whether name is a temporary file made beside path for
// it, as os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp").
func isTempTwin(name, path string) bool {
	return filepath.Dir(name) == filepath.Dir(path) && strings.HasPrefix(filepath.Base(name), filepath.Base(path)+".") && strings.HasSuffix(name, ".tmp")
}
