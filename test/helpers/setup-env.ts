/**
 * Runs in every test worker before its tests. The CLI obeys FORCE_COLOR
 * over everything else (src/cli/term.ts), so a FORCE_COLOR in the
 * environment that runs the suite would colour every spawned command's
 * piped output; tests that want it set it themselves.
 */
delete process.env['FORCE_COLOR'];
