package main

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
)

// outputError reports err, an error creating or writing the output path
// that arg gave ("--out", "-o", or "output" for an argument), naming both:
// a bad output is the user's choice, and the path alone does not say
// which of the command's files it was. The system's error keeps its own
// path only where it names a file elsewhere ("mkdir /dev/null: not a
// directory" for --out /dev/null/x); beside the output (the path itself,
// or the temporary file renamed to it) the name would repeat.
func outputError(arg, path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && filepath.Dir(pe.Path) == filepath.Dir(path) {
		err = pe.Err
	}
	return fmt.Errorf("%s %s: %w", arg, path, err)
}
