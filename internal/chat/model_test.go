package chat

import "testing"

func TestChannelTypes(t *testing.T) {
	cases := []struct {
		raw         int
		name        string
		text, voice bool
	}{
		{0, "Text", true, false}, {2, "Voice", false, true}, {4, "Category", false, false}, {5, "Announcement", true, false},
		{10, "Announcement Thread", true, false}, {11, "Public Thread", true, false}, {12, "Private Thread", true, false},
		{13, "Stage", false, true}, {15, "Forum", false, false}, {16, "Media", false, false}, {1, "Unknown", false, false},
	}
	for _, c := range cases {
		if ChannelTypeName(c.raw) != c.name || IsTextBased(c.raw) != c.text || IsVoice(c.raw) != c.voice {
			t.Errorf("type %d: %s %v %v", c.raw, ChannelTypeName(c.raw), IsTextBased(c.raw), IsVoice(c.raw))
		}
	}
}

func TestDerivedMemberFields(t *testing.T) {
	s := func(v string) *string { return &v }
	const cdn = "https://cdn.example"
	if u := IconURL(cdn, "1", s("abc")); *u != cdn+"/icons/1/abc.png" {
		t.Error(*u)
	}
	if u := IconURL(cdn, "1", s("a_abc")); *u != cdn+"/icons/1/a_abc.gif" {
		t.Error(*u)
	}
	if IconURL(cdn, "1", nil) != nil || IconURL(cdn, "1", s("")) != nil {
		t.Error("icon url without icon")
	}
	if u := AvatarURL(cdn, "2", "0", s("a_x")); u != cdn+"/avatars/2/a_x.gif" {
		t.Error(u)
	}
	// (80351110224678912 >> 22) % 6 = 5
	if u := AvatarURL(cdn, "80351110224678912", "0", nil); u != cdn+"/embed/avatars/5.png" {
		t.Error(u)
	}
	if u := AvatarURL(cdn, "1", "1337", nil); u != cdn+"/embed/avatars/2.png" {
		t.Error(u)
	}
	if DisplayName("u", s("G"), s("N")) != "N" || DisplayName("u", s("G"), nil) != "G" || DisplayName("u", nil, s("")) != "u" {
		t.Error("display name")
	}
	if FormattedUsername("u", "0") != "@u" || FormattedUsername("u", "") != "@u" || FormattedUsername("u", "0042") != "u#0042" {
		t.Error("formatted username")
	}
	for in, want := range map[string]bool{"1": true, "12345678901234567890": true, "123456789012345678901": false, "": false, "12a": false, "-1": false} {
		if validSnowflake(in) != want {
			t.Errorf("validSnowflake(%q)", in)
		}
	}
}
