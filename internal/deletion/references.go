package deletion

import (
	"context"
	"fmt"
	"strings"

	"hmid/internal/db"
)

// onDelete is what the database does to referencing rows when the referenced
// row is deleted.
type onDelete int

const (
	noAction onDelete = iota // NO ACTION or RESTRICT: the delete fails while rows refer
	cascade                  // the referencing rows are deleted too
	setNull                  // the referencing column is set to NULL (or its default)
)

// foreignKey is a single-column foreign key read from the catalogue.
type foreignKey struct {
	table, column       string // the referencing side
	refTable, refColumn string // the referenced side
	action              onDelete
	notNull             bool
}

// maxDepth bounds how far clearReferences follows chains of foreign keys (and
// ends self-references).
const maxDepth = 6

// foreignKeys lists the single-column foreign keys of the current schema.
func (s *Service) foreignKeys(ctx context.Context, q db.Querier) ([]foreignKey, error) {
	var query string
	if s.DB.Flavor == db.Postgres {
		query = `SELECT cl.relname, att.attname, ref.relname, ratt.attname,
				CASE con.confdeltype WHEN 'c' THEN 1 WHEN 'n' THEN 2 WHEN 'd' THEN 2 ELSE 0 END, att.attnotnull
			FROM pg_constraint con
			JOIN pg_class cl ON cl.oid = con.conrelid
			JOIN pg_namespace ns ON ns.oid = cl.relnamespace
			JOIN pg_class ref ON ref.oid = con.confrelid
			JOIN pg_attribute att ON att.attrelid = con.conrelid AND att.attnum = con.conkey[1]
			JOIN pg_attribute ratt ON ratt.attrelid = con.confrelid AND ratt.attnum = con.confkey[1]
			WHERE con.contype = 'f' AND ns.nspname = current_schema() AND array_length(con.conkey, 1) = 1`
	} else {
		// A foreign key without a named target column refers to the primary key.
		query = `SELECT m.name, f."from", f."table",
				COALESCE(f."to", (SELECT p.name FROM pragma_table_info(f."table") p WHERE p.pk = 1), 'id'),
				CASE UPPER(f.on_delete) WHEN 'CASCADE' THEN 1 WHEN 'SET NULL' THEN 2 WHEN 'SET DEFAULT' THEN 2 ELSE 0 END,
				COALESCE(c."notnull", 0) <> 0
			FROM sqlite_master m
			JOIN pragma_foreign_key_list(m.name) f
			LEFT JOIN pragma_table_info(m.name) c ON c.name = f."from"
			WHERE m.type = 'table' AND NOT EXISTS (SELECT 1 FROM pragma_foreign_key_list(m.name) g WHERE g.id = f.id AND g.seq > 0)`
	}
	return db.All(ctx, q, func(row db.Scanner) (foreignKey, error) {
		var k foreignKey
		err := row.Scan(&k.table, &k.column, &k.refTable, &k.refColumn, &k.action, &k.notNull)
		return k, err
	}, query)
}

// quote quotes an identifier read from the catalogue (both engines accept
// double quotes).
func quote(id string) string { return `"` + strings.ReplaceAll(id, `"`, `""`) + `"` }

// clearReferences prepares the delete of users row userID: every row that
// refers to it, directly or through rows the delete removes by cascade, and
// that the database would not remove or unlink by itself, is deleted or
// unlinked first. Directly referencing rows are the user's own when the
// column is user_id or NOT NULL (deleted); otherwise the column only names
// the user (reviewed_by, created_by…) and is set to NULL. Rows hanging off
// deleted rows further down are deleted.
func (s *Service) clearReferences(ctx context.Context, tx *db.Tx, userID string) error {
	keys, err := s.foreignKeys(ctx, tx)
	if err != nil {
		return err
	}
	return clearBelow(ctx, tx, keys, "users", `"id" = $1`, userID, 0)
}

// clearBelow handles the rows referring to the rows of table matching where
// (which are about to be deleted).
func clearBelow(ctx context.Context, tx *db.Tx, keys []foreignKey, table, where, userID string, depth int) error {
	if depth >= maxDepth {
		return nil
	}
	for _, k := range keys {
		if k.refTable != table || k.action == setNull {
			continue
		}
		cond := quote(k.column) + ` IN (SELECT ` + quote(k.refColumn) + ` FROM ` + quote(table) + ` WHERE ` + where + `)`
		if depth == 0 {
			cond = quote(k.column) + ` = $1`
		}
		if k.action == noAction && depth == 0 && !k.notNull && k.column != "user_id" {
			if _, err := tx.ExecContext(ctx, `UPDATE `+quote(k.table)+` SET `+quote(k.column)+` = NULL WHERE `+cond, userID); err != nil {
				return fmt.Errorf("unlink %s.%s: %w", k.table, k.column, err)
			}
			continue
		}
		// These rows go (by cascade or here): first what hangs off them.
		if err := clearBelow(ctx, tx, keys, k.table, cond, userID, depth+1); err != nil {
			return err
		}
		if k.action == noAction {
			if _, err := tx.ExecContext(ctx, `DELETE FROM `+quote(k.table)+` WHERE `+cond, userID); err != nil {
				return fmt.Errorf("delete from %s: %w", k.table, err)
			}
		}
	}
	return nil
}
