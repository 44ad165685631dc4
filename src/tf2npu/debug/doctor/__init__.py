"""``tf2npu doctor``: error logs, run folders and scripts in, findings (cause, fix, where) out.

TF-free. The knowledge is the table in :mod:`tf2npu.debug.doctor.symptoms`; reading logs and run
folders is :mod:`tf2npu.debug.doctor.match`; the static check of a script, which reuses the
migration's hazards table, is :mod:`tf2npu.debug.doctor.script`. See ``docs/doctor.md``.
"""
