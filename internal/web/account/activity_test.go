package account

import (
	"testing"

	"hmid/internal/audit"
	"hmid/internal/integrations"
	"hmid/internal/web"
)

// TestActivityTexts checks that every value the activity, integrations and
// admin audit pages put into words has a text: each event type of the one
// list, each source, report reason and report status, each bot status and
// platform scope, and each choice of the admin log's filter. A value added
// to those lists without a text fails here rather than showing as a raw
// identifier.
func TestActivityTexts(t *testing.T) {
	var keys []string
	for _, v := range audit.EventTypes {
		keys = append(keys, "activity.event."+v)
	}
	for _, v := range audit.SourceServices {
		keys = append(keys, "activity.source."+v)
	}
	for _, v := range audit.ReportReasons {
		keys = append(keys, "activity.reason."+v)
	}
	for _, v := range audit.ReportStatuses {
		keys = append(keys, "activity.rstatus."+v)
	}
	for _, v := range []string{audit.StatusSuccess, audit.StatusFailure} {
		keys = append(keys, "activity.status."+v)
	}
	for _, v := range audit.SourceServices {
		keys = append(keys, "admin.audit.source."+v)
	}
	for _, v := range audit.SortFields {
		keys = append(keys, "admin.audit.sort."+v)
	}
	for _, v := range []string{"true", "false"} {
		keys = append(keys, "admin.audit.reported."+v)
	}
	for _, v := range []string{"desc", "asc"} {
		keys = append(keys, "admin.audit.dir."+v)
	}
	for _, v := range integrations.BotStatuses {
		keys = append(keys, "integrations.bot."+v)
	}
	for _, sc := range integrations.Scopes {
		keys = append(keys, "integrations.scope."+sc.Name)
	}
	for _, lang := range web.Languages() {
		for _, k := range keys {
			if web.Text(lang, k) == "" {
				t.Errorf("%s has no text %q", lang, k)
			}
		}
	}
}
