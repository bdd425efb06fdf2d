package audit

import (
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"time"
)

// CSVColumns are the columns of the CSV download, in order: every field of
// an audit event (spec 2, Audit event) under the name the listing gives it.
var CSVColumns = []string{"id", "created_at", "user_id", "event_type", "status", "source_service", "resource_type",
	"resource_id", "actor_id", "ip_address", "user_agent", "country_code", "country_name", "city", "region",
	"description", "error_message", "metadata", "is_reported"}

// WriteCSV answers r with every event matching its query (the parameters
// of ParseAdminFilter; page and limit do not apply, the file holds all
// matching events) as a CSV file (RFC 4180: a header line, CRLF line ends)
// in the listing's order, streamed row by row: GET /v1/admin/audit/export
// and the admin console's download. The filter is checked and the query
// started before the first byte, so an error it returns happened before
// anything was sent and the caller can still answer it. A failure while
// streaming aborts the response (http.ErrAbortHandler) so the client sees
// a broken transfer rather than a file that looks complete.
func (s *Service) WriteCSV(w http.ResponseWriter, r *http.Request) error {
	ctx := r.Context()
	f, err := ParseAdminFilter(r.URL.Query())
	if err != nil {
		return err
	}
	if f, err = resolveSearch(ctx, s.DB, f); err != nil {
		return err
	}
	var rows *sql.Rows
	if f.searchIDs == nil || len(f.searchIDs) > 0 {
		where, args := f.where()
		if rows, err = s.DB.QueryContext(ctx, `SELECT `+entryCols+` FROM audit_events`+where+f.orderBy(), args...); err != nil {
			return err
		}
		defer rows.Close()
	}
	h := w.Header()
	// header=present: RFC 4180 §3, the first line names the columns.
	h.Set("Content-Type", "text/csv; charset=utf-8; header=present")
	h.Set("Content-Disposition", `attachment; filename="hmid-audit-`+s.Clock.Now().UTC().Format(time.DateOnly)+`.csv"`)
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	out := csv.NewWriter(w)
	out.UseCRLF = true
	err = out.Write(CSVColumns)
	n := 0
	for rows != nil && err == nil && rows.Next() {
		var e Entry
		if e, err = scanEntry(rows); err == nil {
			err = out.Write(csvRecord(e))
			n++
		}
	}
	if err == nil && rows != nil {
		err = rows.Err()
	}
	out.Flush()
	if err == nil {
		err = out.Error()
	}
	if err != nil {
		s.Log.WarnContext(ctx, "audit CSV download cut short", slog.Int("rows_sent", n), slog.String("error", err.Error()))
		panic(http.ErrAbortHandler)
	}
	return nil
}

// csvRecord is e as one line of the download, in CSVColumns' order; a null
// field is an empty cell.
func csvRecord(e Entry) []string {
	meta, _ := json.Marshal(e.Metadata)
	return []string{
		e.ID, e.CreatedAt.UTC().Format(time.RFC3339Nano), cell(e.UserID), e.EventType, e.Status, e.SourceService,
		cell(e.ResourceType), cell(e.ResourceID), cell(e.ActorID), cell(e.IPAddress), cell(e.UserAgent),
		cell(e.CountryCode), cell(e.CountryName), cell(e.City), cell(e.Region), cell(e.Description),
		cell(e.ErrorMessage), string(meta), strconv.FormatBool(e.IsReported),
	}
}

// cell is the text of an optional field. Text that a spreadsheet would run
// as a formula (starting with =, +, -, @, a tab or a carriage return) gets
// a leading apostrophe, as OWASP's "CSV Injection" advice has it: user
// agents, descriptions and ids sent by other services are not hmid's to
// trust, and the file is meant to be opened by operators.
func cell(s *string) string {
	if s == nil || *s == "" {
		return ""
	}
	switch (*s)[0] {
	case '=', '+', '-', '@', '\t', '\r':
		return "'" + *s
	}
	return *s
}
