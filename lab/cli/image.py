"""`lab image build`: the container back-end's node image, built ahead of a run (or found
already built: the image is cached by a hash of its inputs)."""

from __future__ import annotations

import sys

from lab.exits import EXIT_INCOMPLETE, EXIT_OK
from runners.components import MissingComponent
from runners.errors import ComponentError


def cmd_image_build() -> int:
    from runners.containers import engine as engines
    from runners.containers import image as images
    from runners.runtime import Run, runtime_root

    run = Run(experiment="lab image build", meta={"backend": "containers"})
    eng = None
    try:
        eng = engines.connect(run)
        print(f"engine: {eng.version()} at {eng.url}")
        tag, took = images.ensure(eng.client, runtime_root(), run.dir / "image-build.log")
        st = images.status(eng.client, tag)
        size = f", {st.size / 1e6:.0f} MB" if st.size else ""
        how = f"built in {took:.0f} s" if took else "already built (cached)"
        print(f"node image {tag}: {how}{size}")
        return EXIT_OK
    except (ComponentError, MissingComponent) as e:
        print(f"Error: {e}", file=sys.stderr)
        return EXIT_INCOMPLETE
    finally:
        if eng is not None:
            service = eng.service
            eng.close()
            if service is not None:
                run.forget(service)
                engines.HostNetState.release(run.dir)
        run.close()
