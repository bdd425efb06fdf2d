package archive

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/go-pdf/fpdf"
)

// Layout of report.pdf, in millimetres and points. The page is A4 portrait.
const (
	margin        = 15.0
	footerSpace   = 18.0 // bottom margin: room for the footer below the page-break line
	lineHeight    = 4.5  // table and key/value line height at bodySize
	cellPadding   = 1.0
	bodySize      = 8.0
	headingSize   = 13.0
	titleSize     = 18.0
	labelWidth    = 55.0 // label column of key/value lines
	maxCellLines  = 30   // see tableRow
	headingNeedsY = 22.0 // a heading needs this much room below it, or it moves to the next page
)

// report draws report.pdf. It wraps one fpdf document; it is used once and
// not shared, because both the document and its cp1252 translator keep
// internal buffers that are not safe for concurrent use.
type report struct {
	pdf *fpdf.Fpdf
	// tr converts UTF-8 to the cp1252 encoding of the PDF core fonts, so that
	// umlauts and ß render; characters outside cp1252 become '.'. data.json
	// keeps the exact text.
	tr func(string) string
	m  *messages
}

// writeReport renders d as a PDF in the language of m and writes it to w.
// d must already be normalized.
func writeReport(w io.Writer, d Data, m *messages, service string) error {
	pdf := fpdf.New("P", "mm", "A4", "")
	r := &report{pdf: pdf, tr: pdf.UnicodeTranslatorFromDescriptor(""), m: m}

	// Fixed dates make the file depend only on the data, not on when it was rendered.
	pdf.SetCreationDate(d.ExportInfo.ExportedAt)
	pdf.SetModificationDate(d.ExportInfo.ExportedAt)
	pdf.SetCatalogSort(true)
	pdf.SetTitle(service+" – "+m.title, true)
	pdf.SetCreator(service, true)
	pdf.SetLang(m.lang)
	pdf.SetMargins(margin, margin, margin)
	pdf.SetAutoPageBreak(true, footerSpace)
	pdf.AliasNbPages("")
	pdf.SetFooterFunc(func() {
		pdf.SetY(-12)
		pdf.SetFont("Helvetica", "", 8)
		pdf.SetTextColor(110, 110, 110)
		pdf.CellFormat(0, 5, r.tr(service+" · "+m.title), "", 0, "L", false, 0, "")
		pdf.SetX(margin)
		pdf.CellFormat(0, 5, r.tr(fmt.Sprintf(m.page, pdf.PageNo())), "", 0, "R", false, 0, "")
		pdf.SetTextColor(0, 0, 0)
	})
	pdf.AddPage()

	r.title(d, service)
	r.accountSection(d)
	r.platformAccountsSection(d)
	r.connectedAppsSection(d)
	r.ownedAppsSection(d)
	r.apiKeysSection(d)
	r.rolesSection(d)
	r.twoFactorSection(d)
	r.deletionSection(d)
	r.exportHistorySection(d)
	r.sessionsSection(d)

	return pdf.Output(w)
}

func (r *report) title(d Data, service string) {
	m := r.m
	r.pdf.SetFont("Helvetica", "B", titleSize)
	r.pdf.CellFormat(0, 10, r.tr(m.title), "", 1, "L", false, 0, "")
	r.pdf.SetFont("Helvetica", "", 10)
	r.pdf.CellFormat(0, 6, r.tr(service+" · "+m.exported+" "+m.date(d.ExportInfo.ExportedAt)+" UTC"), "", 1, "L", false, 0, "")
	r.pdf.Ln(2)
	r.pdf.SetFont("Helvetica", "", 9)
	r.pdf.MultiCell(0, 4.5, r.tr(fmt.Sprintf(m.intro, service)+" "+m.allTimesUTC), "", "L", false)
}

func (r *report) accountSection(d Data) {
	m, u := r.m, d.User
	r.keyValueSection(m.account, [][2]string{
		{m.userID, u.ID}, {m.username, u.Username},
		{m.privacyMode, m.bool(u.PrivacyMode)}, {m.avatarsEnabled, m.bool(u.AvatarsEnabled)},
		{m.createdAt, m.date(u.CreatedAt)}, {m.lastLoginAt, m.optDate(u.LastLoginAt)},
	})
}

func (r *report) platformAccountsSection(d Data) {
	m := r.m
	tableSection(r, m.platformAccounts, []column{{m.platform, 3}, {m.username, 4}, {m.email, 5}, {m.primary, 1.5}, {m.connectedAt, 2.5}},
		d.PlatformAccounts, func(a PlatformAccount) []string {
			return []string{a.Platform, a.Username, a.Email, m.bool(a.IsPrimary), m.date(a.ConnectedAt)}
		})
}

func (r *report) connectedAppsSection(d Data) {
	m := r.m
	tableSection(r, m.connectedApps, []column{{m.app, 4}, {m.scopes, 6}, {m.firstParty, 2.2}, {m.consentedAt, 2.8}},
		d.ConnectedApps, func(a ConnectedApp) []string {
			return []string{a.Name, strings.Join(a.Scopes, ", "), m.bool(a.IsFirstParty), m.date(a.ConsentedAt)}
		})
}

func (r *report) ownedAppsSection(d Data) {
	m := r.m
	tableSection(r, m.ownedApps, []column{{m.name, 3.6}, {m.clientType, 2}, {m.active, 1.3}, {m.createdAt, 2.7}, {m.redirectURIs, 5}, {m.allowedScopes, 3.4}},
		d.OwnedApps, func(a OwnedApp) []string {
			return []string{
				a.Name + "\n" + a.ID, a.ClientType, m.bool(a.IsActive), m.date(a.CreatedAt),
				strings.Join(a.RedirectURIs, "\n"), strings.Join(a.AllowedScopes, ", "),
			}
		})
}

func (r *report) apiKeysSection(d Data) {
	m := r.m
	tableSection(r, m.apiKeys, []column{{m.name, 3}, {m.keyPrefix, 2.3}, {m.scopes, 3}, {m.active, 1.1}, {m.createdAt, 2.6}, {m.lastUsedAt, 2.6}, {m.expiresAt, 2.6}},
		d.APIKeys, func(k APIKey) []string {
			return []string{
				k.Name, k.KeyPrefix, strings.Join(k.Scopes, ", "), m.bool(k.IsActive),
				m.date(k.CreatedAt), m.optDate(k.LastUsedAt), m.optDate(k.ExpiresAt),
			}
		})
}

func (r *report) rolesSection(d Data) {
	r.heading(r.m.roles)
	if len(d.Roles) == 0 {
		r.empty()
		return
	}
	r.paragraph(strings.Join(d.Roles, ", "))
}

func (r *report) twoFactorSection(d Data) {
	m, t := r.m, d.TwoFactorAuth
	r.keyValueSection(m.twoFactor, [][2]string{
		{m.enabled, m.bool(t.Enabled)}, {m.enabledAt, m.optDate(t.EnabledAt)},
		{m.backupCodesRemaining, strconv.Itoa(t.BackupCodesRemaining)},
	})
}

func (r *report) deletionSection(d Data) {
	m, s := r.m, d.DeletionStatus
	r.keyValueSection(m.deletion, [][2]string{
		{m.scheduledForDeletion, m.bool(s.IsScheduledForDeletion)}, {m.scheduledDeletionAt, m.optDate(s.ScheduledDeletionAt)},
		{m.deleted, m.bool(s.IsDeleted)}, {m.deletedAt, m.optDate(s.DeletedAt)},
	})
}

func (r *report) exportHistorySection(d Data) {
	m := r.m
	tableSection(r, m.exportHistory, []column{{m.exportedAtCol, 1}, {m.format, 1}}, d.ExportLogs, func(l ExportLog) []string {
		return []string{m.date(l.ExportedAt), l.Format}
	})
}

// sessionsSection leaves out the session id, which means nothing to a reader
// and is in data.json; the IP address goes through IPAddress.String, so only
// its masked form can appear.
func (r *report) sessionsSection(d Data) {
	m := r.m
	cols := []column{{m.ipAddress, 3.3}, {m.device, 1.4}, {m.browser, 1.8}, {m.os, 1.8}, {m.provider, 2}, {m.createdAt, 2.55}, {m.lastActivityAt, 2.55}, {m.expiresAt, 2.55}}
	tableSection(r, m.sessions, cols, d.Sessions, func(s Session) []string {
		provider := s.ProviderName
		if provider == "" {
			provider = s.Provider
		}
		return []string{
			s.IPAddress.String(), s.DeviceType, s.BrowserName, s.OSName, provider,
			m.date(s.CreatedAt), m.date(s.LastActivityAt), m.date(s.ExpiresAt),
		}
	})
}

// tableSection writes a section that is one table: the heading, then a row
// of cells for each item.
func tableSection[T any](r *report, heading string, cols []column, items []T, row func(T) []string) {
	r.heading(heading)
	rows := make([][]string, len(items))
	for i, it := range items {
		rows[i] = row(it)
	}
	r.table(cols, rows)
}

// heading starts a section. It moves to a new page when too little room is
// left, so a heading is never stranded at the bottom apart from its content.
func (r *report) heading(text string) {
	_, pageH := r.pdf.GetPageSize()
	if r.pdf.GetY()+headingNeedsY > pageH-footerSpace {
		r.pdf.AddPage()
	} else {
		r.pdf.Ln(5)
	}
	r.pdf.SetFont("Helvetica", "B", headingSize)
	r.pdf.CellFormat(0, 7, r.tr(text), "B", 1, "L", false, 0, "")
	r.pdf.Ln(2)
	r.pdf.SetFont("Helvetica", "", bodySize)
}

// keyValueSection writes a section of "label: value" lines, one for each
// label and value pair.
func (r *report) keyValueSection(heading string, lines [][2]string) {
	r.heading(heading)
	for _, l := range lines {
		r.keyValue(l[0], l[1])
	}
}

// keyValue writes one "label: value" line; long values wrap under themselves.
func (r *report) keyValue(label, value string) {
	r.pdf.SetFont("Helvetica", "B", bodySize)
	r.pdf.CellFormat(labelWidth, lineHeight, r.tr(label), "", 0, "L", false, 0, "")
	r.pdf.SetFont("Helvetica", "", bodySize)
	r.pdf.MultiCell(0, lineHeight, r.tr(value), "", "L", false)
}

func (r *report) paragraph(text string) {
	r.pdf.SetFont("Helvetica", "", bodySize)
	r.pdf.MultiCell(0, lineHeight, r.tr(text), "", "L", false)
}

// empty says that a section has nothing in it, rather than leaving a bare
// heading that looks like a rendering fault.
func (r *report) empty() {
	r.pdf.SetFont("Helvetica", "I", bodySize)
	r.pdf.CellFormat(0, lineHeight, r.tr(r.m.none), "", 1, "L", false, 0, "")
	r.pdf.SetFont("Helvetica", "", bodySize)
}

// column is a table column: its header and its share of the page width.
type column struct {
	title  string
	weight float64
}

// table draws rows under a header row that is repeated on every page the
// table spans, so a long list (hundreds of sessions) stays readable.
func (r *report) table(cols []column, rows [][]string) {
	if len(rows) == 0 {
		r.empty()
		return
	}
	pageW, _ := r.pdf.GetPageSize()
	var total float64
	for _, c := range cols {
		total += c.weight
	}
	widths := make([]float64, len(cols))
	header := make([]string, len(cols))
	for i, c := range cols {
		widths[i] = (pageW - 2*margin) * c.weight / total
		header[i] = c.title
	}

	r.tableRow(widths, header, true)
	for _, row := range rows {
		if !r.tableRow(widths, row, false) {
			r.pdf.AddPage()
			r.tableRow(widths, header, true)
			r.tableRow(widths, row, false)
		}
	}
}

// tableRow draws one row whose cells wrap their text, and reports false
// without drawing anything when the row does not fit on the current page.
// Cells are cut at maxCellLines lines so that any row fits on a fresh page;
// a taller row would be split by fpdf's automatic page break mid-cell.
func (r *report) tableRow(widths []float64, cells []string, header bool) bool {
	pdf := r.pdf
	if header {
		pdf.SetFont("Helvetica", "B", bodySize)
		pdf.SetFillColor(230, 230, 230)
	} else {
		pdf.SetFont("Helvetica", "", bodySize)
	}

	lines := make([][][]byte, len(cells))
	height := 0.0
	for i, text := range cells {
		cellLines := pdf.SplitLines([]byte(r.tr(text)), widths[i])
		if len(cellLines) > maxCellLines {
			cellLines = append(cellLines[:maxCellLines-1], []byte(r.tr("…")))
		}
		lines[i] = cellLines
		height = max(height, float64(len(cellLines))*lineHeight)
	}
	height = max(height, lineHeight) + 2*cellPadding

	_, pageH := pdf.GetPageSize()
	x, y := margin, pdf.GetY()
	if y+height > pageH-footerSpace {
		return false
	}
	for i, cellLines := range lines {
		style := "D"
		if header {
			style = "FD"
		}
		pdf.Rect(x, y, widths[i], height, style)
		for j, line := range cellLines {
			pdf.SetXY(x, y+cellPadding+float64(j)*lineHeight)
			pdf.CellFormat(widths[i], lineHeight, string(line), "", 0, "L", false, 0, "")
		}
		x += widths[i]
	}
	pdf.SetXY(margin, y+height)
	return true
}
