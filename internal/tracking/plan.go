package tracking

import (
	"context"

	"hmid/internal/db"
	"hmid/internal/httpx"
)

// planFields are the plain body fields trips and trip templates share, with
// the same rules; only the weight's name differs (weight_kg on a trip,
// default_weight_kg on a template).
type planFields struct {
	name, description, notes httpx.Opt[string]
	gpsLogging               httpx.Opt[bool]
	weightName               string
	weight                   httpx.Opt[float64]
	tags                     httpx.Opt[[]string]
}

// planTarget points at the fields of a Trip or a Template that applyPlan sets.
type planTarget struct {
	name, description, notes *string
	gpsLogging               *bool
	weight                   **float64
	tags                     *[]string
}

// applyPlan validates the fields present in in and stores them through out.
// The first invalid field is the error, checked in the order name,
// description, gps_logging_enabled, weight, notes, tags.
func applyPlan(in planFields, out planTarget) error {
	if err := setName("name", in.name, out.name); err != nil {
		return err
	}
	if err := setText("description", in.description, out.description); err != nil {
		return err
	}
	if in.gpsLogging.Set {
		*out.gpsLogging = in.gpsLogging.Value
	}
	if in.weight.Set {
		if err := checkNonNegative(in.weightName, in.weight.Ptr()); err != nil {
			return err
		}
		*out.weight = in.weight.Ptr()
	}
	if err := setText("notes", in.notes, out.notes); err != nil {
		return err
	}
	if in.tags.Set {
		tags, err := cleanTags(in.tags.Value)
		if err != nil {
			return err
		}
		*out.tags = tags
	}
	return nil
}

// ref is one reference field of a body: its JSON name, its value and the
// field it is stored in.
type ref struct {
	name string
	opt  httpx.Opt[string]
	dst  **string
}

// setRefs validates the reference fields present, in the order given, and
// stores them; each must be a UUID naming an existing row (null clears it).
func setRefs(ctx context.Context, q db.Querier, refs ...ref) error {
	for _, f := range refs {
		if !f.opt.Set {
			continue
		}
		id, err := optUUID(f.name, f.opt.Ptr())
		if err != nil {
			return err
		}
		if err := checkRef(ctx, q, f.name, id); err != nil {
			return err
		}
		*f.dst = id
	}
	return nil
}
