-- The /v1/best lookup cache of every process (service/lookup/, issue #11) is invalidated by these
-- notifications. Triggers, not the stores, send them: every write path (trial completion, imports,
-- admin deletes, a psql session) invalidates, and nothing else need remember to.
--
-- ktune_best: a best row was inserted, updated or deleted; payload {"kernel","device_class",
-- "kernel_hash","problem_key","toolchain"} of the row (both the old and the new key when an UPDATE
-- changes it), or "*" (flush everything) when the payload would pass 7000 bytes (NOTIFY's limit
-- is 8000) or the table was truncated.
-- ktune_models: a model row became (or was) 'ready' or 'superseded'; payload {"kernel",
-- "device_class","kernel_hash","toolchain"}.
-- Notifications are sent at commit, so a listener that reads after one sees the change.

CREATE FUNCTION ktune_best_payload(kernel text, device_class text, kernel_hash text,
                                   problem_key text, toolchain text)
RETURNS text LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN octet_length(p) > 7000 THEN '*' ELSE p END
    FROM (SELECT json_build_object('kernel', kernel, 'device_class', device_class,
                                   'kernel_hash', kernel_hash, 'problem_key', problem_key,
                                   'toolchain', toolchain)::text AS p) x
$$;

CREATE FUNCTION ktune_best_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        PERFORM pg_notify('ktune_best', ktune_best_payload(OLD.kernel, OLD.device_class,
                          OLD.kernel_hash, OLD.problem_key, OLD.toolchain));
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        -- the same payload twice in one transaction is sent once
        PERFORM pg_notify('ktune_best', ktune_best_payload(NEW.kernel, NEW.device_class,
                          NEW.kernel_hash, NEW.problem_key, NEW.toolchain));
    END IF;
    RETURN NULL;
END
$$;

CREATE FUNCTION ktune_best_notify_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('ktune_best', '*');
    RETURN NULL;
END
$$;

CREATE TRIGGER best_notify AFTER INSERT OR UPDATE OR DELETE ON best
    FOR EACH ROW EXECUTE FUNCTION ktune_best_notify();
CREATE TRIGGER best_notify_truncate AFTER TRUNCATE ON best
    FOR EACH STATEMENT EXECUTE FUNCTION ktune_best_notify_truncate();

CREATE FUNCTION ktune_models_notify() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    r models%ROWTYPE;
    served_before boolean := TG_OP <> 'INSERT' AND OLD.status IN ('ready', 'superseded');
    served_now boolean := TG_OP <> 'DELETE' AND NEW.status IN ('ready', 'superseded');
BEGIN
    -- Heartbeats and other updates that leave the status as it was say nothing.
    IF TG_OP = 'UPDATE' AND OLD.status = NEW.status AND OLD.model IS NOT DISTINCT FROM NEW.model THEN
        RETURN NULL;
    END IF;
    IF NOT (served_before OR served_now) THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'DELETE' THEN r := OLD; ELSE r := NEW; END IF;
    PERFORM pg_notify('ktune_models', json_build_object('kernel', r.kernel, 'device_class',
                      r.device_class, 'kernel_hash', r.kernel_hash, 'toolchain', r.toolchain)::text);
    RETURN NULL;
END
$$;

CREATE TRIGGER models_notify AFTER INSERT OR UPDATE OR DELETE ON models
    FOR EACH ROW EXECUTE FUNCTION ktune_models_notify();
