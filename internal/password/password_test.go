package password

import "testing"

func TestHashVerify(t *testing.T) {
	p := Params{Memory: 64, Time: 1, Threads: 1, KeyLen: 32, SaltLen: 16}
	h, err := HashWith(p, "correct horse")
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := Verify("correct horse", h); !ok || err != nil {
		t.Fatalf("verify = %v, %v", ok, err)
	}
	if ok, _ := Verify("wrong", h); ok {
		t.Fatal("wrong password accepted")
	}
	h2, _ := HashWith(p, "correct horse")
	if h == h2 {
		t.Fatal("salt not random")
	}
	for _, bad := range []string{"", "$argon2i$v=19$m=64,t=1,p=1$AA$AA", "$argon2id$v=19$m=0,t=1,p=1$AA$AA", "$argon2id$v=19$m=64,t=1,p=1$!!$AA"} {
		if _, err := Verify("x", bad); err != ErrMalformed {
			t.Fatalf("Verify(%q) err = %v", bad, err)
		}
	}
}

// BenchmarkArgon2idOWASP is the bound for password logins: OWASP-parameter
// verifications per second on all cores (b.RunParallel).
func BenchmarkArgon2idOWASP(b *testing.B) {
	h, err := Hash("correct horse battery")
	if err != nil {
		b.Fatal(err)
	}
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if ok, _ := Verify("correct horse battery", h); !ok {
				b.Error("verify failed")
			}
		}
	})
}
