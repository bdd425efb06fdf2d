package archive_test

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ledongthuc/pdf"

	"hmid/internal/export/archive"
)

var (
	berlin     = time.FixedZone("CET", 3600)
	exportedAt = time.Date(2026, 11, 22, 14, 5, 9, 123456789, berlin) // 13:05:09 UTC
)

// Raw addresses used in the fixtures; none of them may appear in any file.
const (
	rawIPv4   = "203.0.113.57"
	rawIPv6   = "2001:db8:85a3::8a2e:370:7334"
	rawMapped = "::ffff:198.51.100.23"
)

func ptr[T any](v T) *T { return &v }

// fixture is a realistic export: an account with an umlaut in its name, two
// platform accounts, consents, an owned app, keys, 2FA on, a pending deletion.
func fixture() archive.Data {
	created := time.Date(2024, 3, 1, 9, 30, 0, 0, time.UTC)
	return archive.Data{
		ExportInfo: archive.ExportInfo{ExportedAt: exportedAt},
		User: archive.User{
			ID: "4f0c7d3e-2b1a-4c5d-9e8f-0a1b2c3d4e5f", Username: "jürgen_größe",
			PrivacyMode: true, AvatarsEnabled: false,
			CreatedAt: created, LastLoginAt: ptr(exportedAt.Add(-time.Hour)),
		},
		PlatformAccounts: []archive.PlatformAccount{
			{Platform: "Email", Username: "jürgen_größe", Email: "juergen@example.org", IsPrimary: true, ConnectedAt: created},
			{Platform: "Discord", Username: "jürgen#1234", Email: "", IsPrimary: false, ConnectedAt: created.AddDate(0, 1, 0)},
		},
		ConnectedApps: []archive.ConnectedApp{
			{Name: "Pegel-Monitor", Scopes: []string{"openid", "profile", "email"}, IsFirstParty: false, ConsentedAt: created.AddDate(0, 2, 0)},
			{Name: "hmid Konto", Scopes: nil, IsFirstParty: true, ConsentedAt: created},
		},
		OwnedApps: []archive.OwnedApp{{
			ID: "app-6a1f", Name: "Mein Tracker", ClientType: "public",
			RedirectURIs:  []string{"https://tracker.example.org/callback?a=1&b=2", "tracker://oauth"},
			AllowedScopes: []string{"openid", "profile"}, IsActive: true, CreatedAt: created.AddDate(0, 3, 0),
		}},
		APIKeys: []archive.APIKey{
			{Name: "Heimserver", KeyPrefix: "hm_3fa9c1…", Scopes: []string{"gps:write"}, IsActive: true, CreatedAt: created, LastUsedAt: ptr(exportedAt.Add(-24 * time.Hour))},
			{Name: "alt", KeyPrefix: "hm_77b2d0…", Scopes: nil, IsActive: false, CreatedAt: created, ExpiresAt: ptr(created.AddDate(1, 0, 0))},
		},
		Roles:          []string{"user", "tracker_admin"},
		TwoFactorAuth:  archive.TwoFactorAuth{Enabled: true, EnabledAt: ptr(created.AddDate(0, 0, 7)), BackupCodesRemaining: 8},
		DeletionStatus: archive.DeletionStatus{IsScheduledForDeletion: true, ScheduledDeletionAt: ptr(exportedAt.AddDate(0, 0, 7))},
		ExportLogs:     []archive.ExportLog{{ExportedAt: created.AddDate(1, 0, 0), Format: "zip"}},
		Sessions: []archive.Session{
			session(0, rawIPv4, "Firefox"),
			session(1, rawIPv6, "Safari"),
			session(2, rawMapped, "Chrome"),
		},
	}
}

func session(i int, ip, browser string) archive.Session {
	start := time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Hour)
	return archive.Session{
		ID: fmt.Sprintf("sess-%03d", i), IPAddress: archive.IPAddress(ip),
		DeviceType: "desktop", BrowserName: browser, OSName: "Linux",
		Provider: "email", ProviderName: "E-Mail",
		CreatedAt: start, ExpiresAt: start.AddDate(0, 0, 30), LastActivityAt: start.Add(30 * time.Minute),
	}
}

// opened is an archive read back from Write's output.
type opened struct {
	names   []string
	files   map[string][]byte
	pdfText string
	pages   int
}

func writeAndOpen(t *testing.T, d archive.Data, opts archive.Options) opened {
	t.Helper()
	var buf bytes.Buffer
	if err := archive.Write(&buf, d, opts); err != nil {
		t.Fatalf("Write: %v", err)
	}
	zr, err := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatalf("open zip: %v", err)
	}
	o := opened{files: map[string][]byte{}}
	for _, f := range zr.File {
		if f.Method != zip.Deflate {
			t.Errorf("%s: method %d, want deflate", f.Name, f.Method)
		}
		if !f.Modified.Equal(exportedAt.Truncate(time.Second)) {
			t.Errorf("%s: modified %v, want the export time", f.Name, f.Modified)
		}
		rc, err := f.Open()
		if err != nil {
			t.Fatalf("open %s: %v", f.Name, err)
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatalf("read %s: %v", f.Name, err)
		}
		o.names = append(o.names, f.Name)
		o.files[f.Name] = b
	}
	if p, ok := o.files[archive.ReportFileName]; ok {
		r, err := pdf.NewReader(bytes.NewReader(p), int64(len(p)))
		if err != nil {
			t.Fatalf("open pdf: %v", err)
		}
		o.pages = r.NumPage()
		tr, err := r.GetPlainText()
		if err != nil {
			t.Fatalf("pdf text: %v", err)
		}
		b, _ := io.ReadAll(tr)
		o.pdfText = string(b)
	}
	return o
}

func TestWriteContainsExactlyTheThreeFiles(t *testing.T) {
	o := writeAndOpen(t, fixture(), archive.Options{})
	want := []string{"data.json", "report.pdf", "README.txt"}
	if !slices.Equal(o.names, want) {
		t.Fatalf("files = %v, want %v", o.names, want)
	}
	if !bytes.HasPrefix(o.files["report.pdf"], []byte("%PDF-")) {
		t.Error("report.pdf does not start with a PDF header")
	}
}

func keys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }

func sorted(s ...string) []string { return slices.Sorted(slices.Values(s)) }

func TestDataJSONHasExactlyTheSpecKeys(t *testing.T) {
	o := writeAndOpen(t, fixture(), archive.Options{})
	var doc map[string]any
	if err := json.Unmarshal(o.files["data.json"], &doc); err != nil {
		t.Fatalf("data.json: %v", err)
	}
	if got, want := keys(doc), sorted("exportInfo", "user", "platformAccounts", "connectedApps", "ownedApps",
		"apiKeys", "roles", "twoFactorAuth", "deletionStatus", "exportLogs", "sessions",
		"passkeys"); !slices.Equal(got, want) { // passkeys: issue 20, beyond the spec's list
		t.Fatalf("top-level keys = %v, want %v", got, want)
	}

	objects := map[string][]string{
		"exportInfo":     sorted("exportedAt", "format", "version"),
		"user":           sorted("id", "username", "privacyMode", "avatarsEnabled", "createdAt", "lastLoginAt"),
		"twoFactorAuth":  sorted("enabled", "enabledAt", "backupCodesRemaining"),
		"deletionStatus": sorted("isScheduledForDeletion", "scheduledDeletionAt", "isDeleted", "deletedAt"),
	}
	for name, want := range objects {
		obj, ok := doc[name].(map[string]any)
		if !ok {
			t.Errorf("%s is %T, want object", name, doc[name])
			continue
		}
		if got := keys(obj); !slices.Equal(got, want) {
			t.Errorf("%s keys = %v, want %v", name, got, want)
		}
	}

	lists := map[string][]string{
		"platformAccounts": sorted("platform", "username", "email", "isPrimary", "connectedAt"),
		"connectedApps":    sorted("name", "scopes", "isFirstParty", "consentedAt"),
		"ownedApps":        sorted("id", "name", "clientType", "redirectUris", "allowedScopes", "isActive", "createdAt"),
		"apiKeys":          sorted("name", "keyPrefix", "scopes", "isActive", "expiresAt", "lastUsedAt", "createdAt"),
		"exportLogs":       sorted("exportedAt", "format"),
		"sessions": sorted("id", "ipAddress", "deviceType", "browserName", "osName", "provider", "providerName",
			"createdAt", "expiresAt", "lastActivityAt"),
	}
	for name, want := range lists {
		arr, ok := doc[name].([]any)
		if !ok || len(arr) == 0 {
			t.Errorf("%s is %T (len %d), want a non-empty array", name, doc[name], len(arr))
			continue
		}
		for i, el := range arr {
			obj, ok := el.(map[string]any)
			if !ok {
				t.Errorf("%s[%d] is %T, want object", name, i, el)
				continue
			}
			if got := keys(obj); !slices.Equal(got, want) {
				t.Errorf("%s[%d] keys = %v, want %v", name, i, got, want)
			}
		}
	}
	if roles, ok := doc["roles"].([]any); !ok || !slices.Equal(roles, []any{"user", "tracker_admin"}) {
		t.Errorf("roles = %#v, want the role names", doc["roles"])
	}
}

func TestDataJSONValues(t *testing.T) {
	o := writeAndOpen(t, fixture(), archive.Options{})
	var doc struct {
		ExportInfo map[string]any   `json:"exportInfo"`
		User       map[string]any   `json:"user"`
		APIKeys    []map[string]any `json:"apiKeys"`
		Apps       []map[string]any `json:"connectedApps"`
		OwnedApps  []map[string]any `json:"ownedApps"`
		Deletion   map[string]any   `json:"deletionStatus"`
		Sessions   []map[string]any `json:"sessions"`
	}
	if err := json.Unmarshal(o.files["data.json"], &doc); err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name string
		got  any
		want any
	}{
		{"exportInfo.exportedAt in UTC, whole seconds", doc.ExportInfo["exportedAt"], "2026-11-22T13:05:09Z"},
		{"exportInfo.format", doc.ExportInfo["format"], archive.ExportFormat},
		{"exportInfo.version", doc.ExportInfo["version"], archive.FormatVersion},
		{"user.username keeps umlauts", doc.User["username"], "jürgen_größe"},
		{"user.lastLoginAt", doc.User["lastLoginAt"], "2026-11-22T12:05:09Z"},
		{"apiKeys[1].lastUsedAt nil is null", doc.APIKeys[1]["lastUsedAt"], nil},
		{"apiKeys[1].scopes nil is []", doc.APIKeys[1]["scopes"], []any{}},
		{"connectedApps[1].scopes nil is []", doc.Apps[1]["scopes"], []any{}},
		{"ownedApps[0].redirectUris not HTML-escaped", doc.OwnedApps[0]["redirectUris"].([]any)[0], "https://tracker.example.org/callback?a=1&b=2"},
		{"deletionStatus.deletedAt", doc.Deletion["deletedAt"], nil},
		{"sessions[0].ipAddress", doc.Sessions[0]["ipAddress"], "203.0.113.xxx"},
		{"sessions[1].ipAddress", doc.Sessions[1]["ipAddress"], "2001:db8:85a3:xxxx::"},
		{"sessions[2].ipAddress", doc.Sessions[2]["ipAddress"], "198.51.100.xxx"},
	}
	for _, c := range checks {
		if fmt.Sprint(c.got) != fmt.Sprint(c.want) || (c.want == nil) != (c.got == nil) {
			t.Errorf("%s = %#v, want %#v", c.name, c.got, c.want)
		}
	}
	if !bytes.Contains(o.files["data.json"], []byte("\n  \"user\": {")) {
		t.Error("data.json is not indented")
	}
}

func TestEmptyDataEncodesEmptyListsAndNulls(t *testing.T) {
	o := writeAndOpen(t, archive.Data{ExportInfo: archive.ExportInfo{ExportedAt: exportedAt}}, archive.Options{})
	var doc map[string]any
	if err := json.Unmarshal(o.files["data.json"], &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"platformAccounts", "connectedApps", "ownedApps", "apiKeys", "roles", "exportLogs", "sessions"} {
		if arr, ok := doc[k].([]any); !ok || len(arr) != 0 {
			t.Errorf("%s = %#v, want []", k, doc[k])
		}
	}
	if v, ok := doc["user"].(map[string]any)["lastLoginAt"]; !ok || v != nil {
		t.Errorf("user.lastLoginAt = %#v, want null", v)
	}
	// Empty sections say so instead of drawing empty tables.
	if n := strings.Count(o.pdfText, "None."); n != 7 {
		t.Errorf("PDF says None. %d times, want 7 (one per empty list section)", n)
	}
}

func TestMarshalJSONMatchesTheArchive(t *testing.T) {
	d := fixture()
	direct, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	o := writeAndOpen(t, d, archive.Options{})
	// Compare decoded values: json.Marshal escapes & in the redirect URI
	// where data.json keeps it readable, which is the same JSON value.
	var fromMarshal, fromArchive any
	if err := json.Unmarshal(direct, &fromMarshal); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(o.files["data.json"], &fromArchive); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromMarshal, fromArchive) {
		t.Errorf("json.Marshal(Data) differs from data.json:\n%s\n%s", direct, o.files["data.json"])
	}
	if d.Sessions[0].IPAddress != rawIPv4 || d.User.LastLoginAt.Location() != berlin {
		t.Error("marshalling modified the caller's data")
	}
}

func TestNoRawIPAnywhere(t *testing.T) {
	for _, locale := range []string{"en", "de"} {
		t.Run(locale, func(t *testing.T) {
			o := writeAndOpen(t, fixture(), archive.Options{Locale: locale})
			contents := map[string]string{"report.pdf (text)": o.pdfText}
			for name, b := range o.files {
				contents[name] = string(b)
			}
			for name, text := range contents {
				// The IPv6 host part is checked on its own because a
				// renderer could split or reformat the address around it.
				for _, raw := range []string{rawIPv4, rawIPv6, rawMapped, "198.51.100.23", "8a2e:370:7334"} {
					if strings.Contains(text, raw) {
						t.Errorf("%s contains raw IP %q", name, raw)
					}
				}
			}
			for _, masked := range []string{"203.0.113.xxx", "2001:db8:85a3:xxxx::", "198.51.100.xxx"} {
				if !strings.Contains(o.pdfText, masked) {
					t.Errorf("report.pdf lacks masked IP %q", masked)
				}
			}
		})
	}
}

func TestIPAddressNeverPrintsRaw(t *testing.T) {
	ip := archive.IPAddress(rawIPv4)
	for _, s := range []string{fmt.Sprint(ip), fmt.Sprintf("%s|%v", ip, ip), fmt.Sprintf("%+v", archive.Session{IPAddress: ip})} {
		if strings.Contains(s, rawIPv4) {
			t.Errorf("formatted IPAddress %q contains the raw address", s)
		}
	}
}

func TestAPIKeyPrefixIsCapped(t *testing.T) {
	const fullKey = "hm_Zk3v9QpL2xW8rT5yB1nM4cJ7hG0fD6sA"
	d := fixture()
	d.APIKeys[0].KeyPrefix = fullKey
	o := writeAndOpen(t, d, archive.Options{})
	for name, b := range o.files {
		if bytes.Contains(b, []byte(fullKey)) {
			t.Errorf("%s contains the full key", name)
		}
	}
	if strings.Contains(o.pdfText, fullKey) {
		t.Error("report text contains the full key")
	}
	if !bytes.Contains(o.files["data.json"], []byte(`"keyPrefix": "hm_Zk3v9QpL2…"`)) {
		t.Error("data.json lacks the capped key prefix hm_Zk3v9QpL2…")
	}
}

var headings = map[string][]string{
	"en": {"Account", "Platform accounts", "Connected apps", "Your apps", "API keys", "Roles",
		"Two-factor authentication", "Account deletion", "Export history", "Sessions"},
	"de": {"Konto", "Plattformkonten", "Verbundene Apps", "Ihre Apps", "API-Schlüssel", "Rollen",
		"Zwei-Faktor-Authentifizierung", "Kontolöschung", "Exportverlauf", "Sitzungen"},
}

func TestReportPDF(t *testing.T) {
	tests := []struct {
		locale, lang, footer string
		want                 []string
	}{
		{"en", "en", "Page %d of %d", []string{"Personal data export", "Exported on 2026-11-22 13:05 UTC", "Yes", "tracker_admin"}},
		{"", "en", "Page %d of %d", []string{"Personal data export"}},
		{"fr-FR", "en", "Page %d of %d", []string{"Personal data export"}},
		{"de", "de", "Seite %d von %d", []string{"Export personenbezogener Daten", "Exportiert am 22.11.2026 13:05 UTC", "Ja", "Privatsphäre-Modus"}},
		{"de-DE", "de", "Seite %d von %d", []string{"Export personenbezogener Daten"}},
		{"DE_at", "de", "Seite %d von %d", []string{"Export personenbezogener Daten"}},
	}
	for _, tt := range tests {
		t.Run(tt.locale, func(t *testing.T) {
			o := writeAndOpen(t, fixture(), archive.Options{Locale: tt.locale, ServiceName: "hmid"})
			want := append(slices.Clone(headings[tt.lang]), tt.want...)
			for p := 1; p <= o.pages; p++ {
				want = append(want, fmt.Sprintf(tt.footer, p, o.pages))
			}
			want = append(want, "jürgen_größe", "Firefox", "Safari", "Mein Tracker", "hm_3fa9c1…", "Pegel-Monitor")
			for _, s := range want {
				if !strings.Contains(o.pdfText, s) {
					t.Errorf("report text lacks %q", s)
				}
			}
			other := "de"
			if tt.lang == "de" {
				other = "en"
			}
			// The other language's last heading ("Sessions" or "Sitzungen") must not appear.
			if wrong := headings[other][len(headings[other])-1]; strings.Contains(o.pdfText, wrong) {
				t.Errorf("%s report contains the %s heading %q", tt.lang, other, wrong)
			}
		})
	}
}

func TestReportWithManySessionsBreaksPages(t *testing.T) {
	d := fixture()
	d.Sessions = nil
	for i := range 100 {
		d.Sessions = append(d.Sessions, session(i, fmt.Sprintf("192.0.2.%d", i+1), fmt.Sprintf("Browser%03d", i)))
	}
	o := writeAndOpen(t, d, archive.Options{Locale: "de"})
	if o.pages < 3 {
		t.Fatalf("100 sessions fit on %d pages; expected automatic page breaks", o.pages)
	}
	for i := range 100 {
		if b := fmt.Sprintf("Browser%03d", i); !strings.Contains(o.pdfText, b) {
			t.Errorf("session %d (%s) missing from the report", i, b)
		}
	}
	for p := 1; p <= o.pages; p++ {
		if footer := fmt.Sprintf("Seite %d von %d", p, o.pages); !strings.Contains(o.pdfText, footer) {
			t.Errorf("footer %q missing", footer)
		}
	}
	// The table header is repeated on every page the session table spans.
	if n := strings.Count(o.pdfText, "Letzte Aktivität"); n < 2 {
		t.Errorf("session table header appears %d times, want it repeated after page breaks", n)
	}
}

func TestReadme(t *testing.T) {
	dataKeys := []string{"exportInfo", "user", "platformAccounts", "connectedApps", "ownedApps", "apiKeys",
		"roles", "twoFactorAuth", "deletionStatus", "exportLogs", "sessions", "data.json", "report.pdf", "README.txt",
		"203.0.113.xxx"}
	tests := []struct {
		locale string
		want   []string
	}{
		{"en", []string{"myid: personal data export", "Exported on 2026-11-22 13:05 UTC", "partly masked", "Passwords"}},
		{"de-DE", []string{"myid: Export personenbezogener Daten", "Exportiert am 22.11.2026 13:05 UTC", "teilweise maskiert", "Passwörter"}},
	}
	for _, tt := range tests {
		t.Run(tt.locale, func(t *testing.T) {
			o := writeAndOpen(t, fixture(), archive.Options{Locale: tt.locale, ServiceName: "myid"})
			readme := string(o.files["README.txt"])
			for _, s := range append(tt.want, dataKeys...) {
				if !strings.Contains(readme, s) {
					t.Errorf("README lacks %q", s)
				}
			}
		})
	}
}

func TestWriteRejectsMissingExportTimeBeforeWriting(t *testing.T) {
	d := fixture()
	d.ExportInfo.ExportedAt = time.Time{}
	var buf bytes.Buffer
	if err := archive.Write(&buf, d, archive.Options{}); !errors.Is(err, archive.ErrNoExportTime) {
		t.Fatalf("err = %v, want ErrNoExportTime", err)
	}
	if buf.Len() != 0 {
		t.Errorf("%d bytes written before the error", buf.Len())
	}
}

// failAfter accepts n bytes and then fails, like a client that disconnects.
type failAfter struct{ n int }

var errGone = errors.New("client went away")

func (f *failAfter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		return 0, errGone
	}
	f.n -= len(p)
	return len(p), nil
}

func TestWriteReportsWriterErrors(t *testing.T) {
	for _, n := range []int{0, 100, 5000} {
		if err := archive.Write(&failAfter{n: n}, fixture(), archive.Options{}); !errors.Is(err, errGone) {
			t.Errorf("after %d bytes: err = %v, want the writer's error", n, err)
		}
	}
}

func TestWriteIsDeterministic(t *testing.T) {
	var a, b bytes.Buffer
	if err := archive.Write(&a, fixture(), archive.Options{Locale: "de"}); err != nil {
		t.Fatal(err)
	}
	if err := archive.Write(&b, fixture(), archive.Options{Locale: "de"}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("two archives of the same data differ")
	}
}

func TestWriteConcurrently(t *testing.T) {
	t.Parallel()
	errs := make(chan error, 8)
	for i := range 8 {
		go func() {
			errs <- archive.Write(io.Discard, fixture(), archive.Options{Locale: []string{"en", "de"}[i%2]})
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

func TestFileName(t *testing.T) {
	late := time.Date(2026, 11, 22, 23, 30, 0, 0, time.UTC).In(time.FixedZone("", 2*3600)) // Nov 23 locally
	tests := []struct {
		service string
		date    time.Time
		want    string
	}{
		{"hmid", late, "hmid-data-export-2026-11-22.zip"},
		{"", late, "hmid-data-export-2026-11-22.zip"},
		{`my "id"; x`, late, "my--id---x-data-export-2026-11-22.zip"},
		{"Grüße", late, "Gr--e-data-export-2026-11-22.zip"},
	}
	for _, tt := range tests {
		if got := archive.FileName(tt.service, tt.date); got != tt.want {
			t.Errorf("FileName(%q) = %q, want %q", tt.service, got, tt.want)
		}
	}
}

func BenchmarkWrite(b *testing.B) {
	d := fixture()
	d.Sessions = nil
	for i := range 100 {
		d.Sessions = append(d.Sessions, session(i, fmt.Sprintf("198.51.100.%d", i), "Firefox"))
	}
	d.APIKeys = nil
	for i := range 50 {
		d.APIKeys = append(d.APIKeys, archive.APIKey{
			Name: fmt.Sprintf("Schlüssel %d", i), KeyPrefix: "hm_ab12cd…", Scopes: []string{"gps:read", "gps:write"},
			IsActive: i%3 != 0, CreatedAt: exportedAt.AddDate(0, 0, -i), LastUsedAt: ptr(exportedAt.Add(-time.Hour)),
		})
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := archive.Write(io.Discard, d, archive.Options{Locale: "de"}); err != nil {
			b.Fatal(err)
		}
	}
}
