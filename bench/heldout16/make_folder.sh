#!/usr/bin/env bash
# Build the sixteenth held-out documentation folder: the Slurm 22.05 documentation (the
# Slurm Workload Manager: the open-source cluster resource manager and batch job scheduler
# of HPC centres, with its controller slurmctld, its node daemons slurmd, its accounting
# database daemon slurmdbd and its commands sbatch, srun, salloc, squeue, scontrol, sacct,
# ...), as the HTML pages of its web site, from the Debian package slurm-wlm-doc (installed
# here if missing, without recommends; it depends only on libjs-jquery, not on Slurm
# itself). Copies the *.html files of /usr/share/doc/slurm-wlm/html (one flat folder):
# - the guides (71 pages: quick start for users and administrators, accounting, resource
#   limits, QOS, the multifactor priority and fair-share, preemption, gang scheduling,
#   reservations, generic resources (GPUs), cgroups, CPU management, job arrays,
#   heterogeneous jobs, burst buffers, power saving and cloud nodes, federation and
#   multi-cluster, prolog and epilog scripts, containers, the REST daemon and JWT
#   authentication, the FAQ, troubleshooting, the 22.05 release notes and the rest);
# - the man pages of the commands, daemons and configuration files (40 pages: sbatch,
#   srun, salloc, squeue, sinfo, scontrol, sacct, sacctmgr, sreport, ..., slurm.conf,
#   slurmdbd.conf, cgroup.conf, gres.conf, ...);
# except 19 pages that are no documentation of Slurm's use:
# - rest_api.html (the generated reference of the REST API's OpenAPI types and paths,
#   184 KB of text) and openapi_release_notes.html (the changelog of those OpenAPI
#   specifications);
# - the developers' pages: programmer_guide.html, add.html (adding files to the code
#   base), api.html (the C API) and plugins.html (the plugin API);
# - the interactive forms that generate a slurm.conf (configurator.html,
#   configurator.easy.html);
# - lists of links and names: documentation.html, man_index.html and tutorials.html
#   (indexes of pages, man pages and videos), publications.html (talks and papers),
#   team.html (contributing organisations), testimonials.html, meetings.html and
#   slurm_ug_agenda.html (user group meetings), mail.html (mailing lists);
# - the legal pages: disclaimer.html (the GPL's warranty text) and contributor.html (the
#   contributor agreement).
# Left out, not copied: the images, stylesheets, fonts and script of the folder, its three
# PDFs (the contributor agreements and the coding style) and the tutorial archive
# (tutorial_intro_files.tar.gz).
# The folder has no byte-identical duplicates (checked on every run: a duplicate makes
# this script fail, to be added to EXCLUDE). 111 files into DEST (default
# bench/out/heldout16/slurm-wlm-doc, gitignored); prints DEST.
#
#   bench/heldout16/make_folder.sh [DEST]
set -euo pipefail

PKG=slurm-wlm-doc
HTML=/usr/share/doc/slurm-wlm/html
ROOT="${1:-$(cd "$(dirname "$0")/../.." && pwd)/bench/out/heldout16/slurm-wlm-doc}"

# shellcheck source=../doc_folder.sh
source "$(dirname "$0")/../doc_folder.sh"

# the one folder copied, with the pages of it left out
SRC=$HTML DEST=$ROOT MARKER=slurm.conf.html
EXCLUDE=(rest_api.html openapi_release_notes.html
    programmer_guide.html add.html api.html plugins.html
    configurator.html configurator.easy.html
    documentation.html man_index.html tutorials.html publications.html team.html
    testimonials.html meetings.html slurm_ug_agenda.html mail.html
    disclaimer.html contributor.html)
copy_doc_pages >/dev/null

check_no_duplicates
echo "make_folder: $(find "$DEST" -type f -name '*.html' | wc -l) HTML files in all" >&2
echo "$DEST"
