package archive

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// DefaultServiceName is used when Options.ServiceName is empty.
const DefaultServiceName = "hmid"

// Names of the files inside the archive, in the order they are written.
const (
	DataFileName   = "data.json"
	ReportFileName = "report.pdf"
	ReadmeFileName = "README.txt"
)

// ErrNoExportTime is returned by Write when Data.ExportInfo.ExportedAt is
// zero. The caller owns the clock, so a missing time is a programming error,
// not something to paper over with the current time.
var ErrNoExportTime = errors.New("archive: ExportInfo.ExportedAt is zero")

// Options are the presentation settings of an archive.
type Options struct {
	// Locale selects the language of report.pdf and README.txt: a tag whose
	// primary subtag is "de" ("de", "de-DE", "de_AT") gives German, anything
	// else English. data.json does not depend on it.
	Locale string
	// ServiceName names the service in the report and README; empty means
	// DefaultServiceName.
	ServiceName string
}

// Write writes d as a ZIP archive to w: data.json (indented JSON in the
// layout described at [Data]), report.pdf and README.txt, each deflated.
//
// The archive is streamed: only the PDF is built in memory before writing
// starts. It is built first on purpose, so that every failure other than a
// write error (ErrNoExportTime, a PDF rendering error) happens before the
// first byte reaches w, and an HTTP handler can still answer with an error
// status. An error after that comes from w itself.
//
// Session IP addresses appear only masked (see [IPAddress] and [MaskIP]).
func Write(w io.Writer, d Data, opts Options) error {
	if d.ExportInfo.ExportedAt.IsZero() {
		return ErrNoExportTime
	}
	d = d.normalized()
	m := messagesFor(opts.Locale)
	service := opts.ServiceName
	if service == "" {
		service = DefaultServiceName
	}

	var pdf bytes.Buffer
	if err := writeReport(&pdf, d, m, service); err != nil {
		return fmt.Errorf("archive: render %s: %w", ReportFileName, err)
	}

	modified := d.ExportInfo.ExportedAt
	zw := zip.NewWriter(w)
	if err := addFile(zw, DataFileName, modified, func(fw io.Writer) error {
		enc := json.NewEncoder(fw)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false) // see Data.MarshalJSON
		// wire, not Data: d is already normalized, and Data.MarshalJSON
		// would normalize it a second time.
		return enc.Encode(wire(d))
	}); err != nil {
		return err
	}
	if err := addFile(zw, ReportFileName, modified, func(fw io.Writer) error {
		_, err := pdf.WriteTo(fw)
		return err
	}); err != nil {
		return err
	}
	if err := addFile(zw, ReadmeFileName, modified, func(fw io.Writer) error {
		return writeReadme(fw, m, readmeData{Service: service, Date: m.date(d.ExportInfo.ExportedAt)})
	}); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("archive: finish zip: %w", err)
	}
	return nil
}

// addFile adds one deflated file to zw and lets write fill it. Every file
// carries the export time, so the archive's contents depend only on the data.
func addFile(zw *zip.Writer, name string, modified time.Time, write func(io.Writer) error) error {
	fw, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Deflate, Modified: modified})
	if err != nil {
		return fmt.Errorf("archive: add %s: %w", name, err)
	}
	if err := write(fw); err != nil {
		return fmt.Errorf("archive: write %s: %w", name, err)
	}
	return nil
}

// FileName returns the download name of an export made at date, such as
// "hmid-data-export-2026-11-22.zip"; the day is taken in UTC like every time
// in the archive. Characters other than ASCII letters, digits, '.', '_' and
// '-' in service become '-', because the name goes into a
// Content-Disposition header, where quotes, separators or control characters
// could break the header or the user's file system. An empty service means
// DefaultServiceName.
func FileName(service string, date time.Time) string {
	if service == "" {
		service = DefaultServiceName
	}
	safe := strings.Map(func(r rune) rune {
		switch {
		case 'a' <= r && r <= 'z', 'A' <= r && r <= 'Z', '0' <= r && r <= '9', r == '.', r == '_', r == '-':
			return r
		}
		return '-'
	}, service)
	return safe + "-data-export-" + date.UTC().Format(time.DateOnly) + ".zip"
}
